/** What the dashboard's page tests share: an operation as the API gives it, and a stand-in API. */
import type { IncomingMessage } from 'node:http';
import { DASHBOARD_HEADERS, dashboardPage } from '../../src/web/dashboard-page.ts';
import { type Answer, type PageServer, startPageServer } from '../../../mediahook/test/web/page-server.ts';

/** An operation of the API, failed with its callback dead unless `more` says otherwise. */
export function operation(id: string, more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id_gen: id,
    kind: 'image',
    family: 'A',
    state: 'failed',
    webhook_url: 'http://127.0.0.1:9/hook',
    created_at: '2026-01-01T10:00:00.000Z',
    finished_at: '2026-01-01T10:00:01.000Z',
    callback: { state: 'dead', next_attempt_at: null, attempts: [] },
    ...more,
  };
}

export type Api = (url: URL, req: IncomingMessage) => Answer | undefined;

/**
 * Serves the dashboard over `api`; unless `api` says otherwise, a receiver's circuit is closed
 * and the receivers panel and charts are empty.
 */
export function startDashboard(api: Api): Promise<PageServer> {
  const closed = (url: URL): Answer => ({
    json: {
      key: url.pathname.split('/')[3],
      circuit_state: 'closed',
      consecutive_failures: 0,
      open_until: null,
    },
  });
  // The panels' reads, unless `api` answers them: no receiver, no attempt yet.
  const empty = (url: URL): Answer | undefined =>
    url.pathname === '/v1/endpoints'
      ? { json: { endpoints: [] } }
      : url.pathname === '/v1/stats'
        ? { json: { buckets: [] } }
        : url.pathname.startsWith('/v1/endpoints/')
          ? closed(url)
          : undefined;
  return startPageServer(dashboardPage(), DASHBOARD_HEADERS, (url, req) => api(url, req) ?? empty(url));
}
