/**
 * The handlers of the operator's view: receivers' health, a receiver's circuit, recovering what
 * a receiver missed, and attempts over time (docs/service.md, "Operating").
 */
import type { Endpoint, EndpointHealthList, Recovered, Stats } from '../../client/api-types.ts';
import { circuitStateAt, STATS_WINDOWS, type StatsWindow } from '../../store/index.ts';
import { oneOf, queryParam, readJson, sendData, sendJson } from '../api-exchange.ts';
import { parseRecover } from '../request-validation.ts';
import type { RouteHandler } from './route.ts';

const STATS_WINDOW_NAMES = Object.keys(STATS_WINDOWS) as StatsWindow[];

export const listEndpoints: RouteHandler = async ({ res }, { store }) => {
  sendData(res, { endpoints: await store.listEndpointHealth() } satisfies EndpointHealthList);
};

export const getStats: RouteHandler = async ({ res, url }, { store }) => {
  const window = oneOf('window', queryParam(url, 'window'), STATS_WINDOW_NAMES) ?? '1h';
  sendData(res, { buckets: await store.attemptStats(window) } satisfies Stats);
};

export const recoverEndpoint: RouteHandler = async ({ req, res, params }, { store, log }) => {
  const key = params['key']!;
  const { since } = parseRecover(await readJson(req));
  const requeued = await store.recoverEndpoint(key, since);
  log('info', 'endpoint_recovered', { endpoint: key, since: new Date(since).toISOString(), requeued });
  sendJson(res, 202, { requeued } satisfies Recovered);
};

export const getEndpoint: RouteHandler = async ({ res, params }, { store }) => {
  const record = await store.getEndpoint(params['key']!);
  sendData(res, {
    key: record.key,
    circuit_state: circuitStateAt(record.circuit_state, record.open_until, Date.now()),
    consecutive_failures: record.consecutive_failures,
    open_until: record.open_until === null ? null : new Date(record.open_until).toISOString(),
  } satisfies Endpoint);
};
