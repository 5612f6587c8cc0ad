/**
 * The handlers of the operator's view: receivers' health, a receiver's circuit, recovering what
 * a receiver missed, and attempts over time (docs/service.md, "Operating").
 */
import type { Endpoint, EndpointHealthList, Recovered, Stats } from '../../client/api-types.ts';
import { circuitStateAt, STATS_WINDOWS, type StatsWindow } from '../../store/index.ts';
import { oneOf, queryParam, readJson, sendData, sendJson, textParam } from '../api-exchange.ts';
import { ApiError } from '../api-error.ts';
import { type Caller, scopeOf } from '../clients/api-keys.ts';
import { parseRecover } from '../request-validation.ts';
import type { RouteHandler } from './route.ts';

const STATS_WINDOW_NAMES = Object.keys(STATS_WINDOWS) as StatsWindow[];

/** A client sees its own callbacks' receivers and attempts; an admin every client's, or one's. */
function viewOf(caller: Caller, url: URL) {
  return scopeOf(caller, textParam(url, 'client'));
}

export const listEndpoints: RouteHandler = async ({ res, url, caller }, { store }) => {
  sendData(res, {
    endpoints: await store.listEndpointHealth(viewOf(caller, url)),
  } satisfies EndpointHealthList);
};

export const getStats: RouteHandler = async ({ res, url, caller }, { store }) => {
  const window = oneOf('window', queryParam(url, 'window'), STATS_WINDOW_NAMES) ?? '1h';
  sendData(res, { buckets: await store.attemptStats(viewOf(caller, url), window) } satisfies Stats);
};

export const recoverEndpoint: RouteHandler = async ({ req, res, params, caller }, { store, log }) => {
  const key = params['key']!;
  const { since } = parseRecover(await readJson(req));
  const requeued = await store.recoverEndpoint(scopeOf(caller), key, since);
  log('info', 'endpoint_recovered', { endpoint: key, since: new Date(since).toISOString(), requeued });
  sendJson(res, 202, { requeued } satisfies Recovered);
};

export const getEndpoint: RouteHandler = async ({ res, params, caller }, { store }) => {
  const record = await store.endpointCircuit(scopeOf(caller), params['key']!);
  if (record === undefined) throw new ApiError(404, 'not_found', `no callback went to ${params['key']}`);
  sendData(res, {
    key: record.key,
    circuit_state: circuitStateAt(record.circuit_state, record.open_until, Date.now()),
    consecutive_failures: record.consecutive_failures,
    open_until: record.open_until === null ? null : new Date(record.open_until).toISOString(),
  } satisfies Endpoint);
};
