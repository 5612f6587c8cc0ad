/**
 * The handlers outside `/v1`, open to all: liveness, readiness, metrics, the OpenAPI document,
 * the dashboard.
 */
import { DASHBOARD_HEADERS, dashboardPage } from '../../web/dashboard-page.ts';
import { JSON_TYPE, send, sendJson } from '../api-exchange.ts';
import type { RouteHandler } from './route.ts';

export const health: RouteHandler = ({ res }) => send(res, 200, JSON_TYPE, '{"ok":true}');

export const ready: RouteHandler = async ({ res }, { readiness }) => {
  const verdict = await readiness();
  sendJson(res, verdict.ready ? 200 : 503, verdict);
};

export const openApi: RouteHandler = ({ res }, { openapi }) => send(res, 200, 'application/json', openapi);

export const metricsPage: RouteHandler = async ({ res }, { store, metrics }) =>
  send(res, 200, 'text/plain; version=0.0.4; charset=utf-8', metrics.render(await store.queueDepth()));

export const dashboard: RouteHandler = ({ res }) =>
  send(res, 200, 'text/html; charset=utf-8', dashboardPage(), DASHBOARD_HEADERS);
