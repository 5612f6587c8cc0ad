/**
 * The operator's view of the API: receivers' health, a receiver's circuit, recovering what a
 * receiver missed, and attempts over time (docs/service.md, "Operating").
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { circuitStateAt, STATS_WINDOWS, type StatsWindow, type Store } from '../store/index.ts';
import {
  methodOf,
  oneOf,
  queryParam,
  readJson,
  segment,
  sendData,
  sendJson,
  textParam,
} from './api-exchange.ts';
import { type Caller, scopeOf } from './clients/api-keys.ts';
import type { Logger } from './json-log.ts';
import { parseRecover } from './request-validation.ts';

const ENDPOINT_PATH = /^\/v1\/endpoints\/([^/]+)(\/recover)?$/;
const WINDOWS = Object.keys(STATS_WINDOWS) as StatsWindow[];

/**
 * Answers `req` when its path is one of the operator's view; false when it is not.
 *
 * @example
 * if (await operatorRoute(store, log, req, res, url, caller)) return;
 */
export async function operatorRoute(
  store: Store,
  log: Logger,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  caller: Caller,
): Promise<boolean> {
  const path = url.pathname;
  // A client sees its own callbacks' receivers and attempts; an admin may name a client.
  const scope = scopeOf(caller, textParam(url, 'client'));
  if (path === '/v1/endpoints') {
    methodOf(req, path, ['GET']);
    sendData(res, { endpoints: await store.listEndpointHealth(scope) });
    return true;
  }
  if (path === '/v1/stats') {
    methodOf(req, path, ['GET']);
    const window = oneOf('window', queryParam(url, 'window'), WINDOWS) ?? '1h';
    sendData(res, { buckets: await store.attemptStats(scope, window) });
    return true;
  }
  const endpoint = ENDPOINT_PATH.exec(path);
  if (!endpoint) return false;
  const key = segment(endpoint[1]!, path);
  if (endpoint[2] === '/recover') {
    methodOf(req, path, ['POST']);
    const { since } = parseRecover(await readJson(req));
    const requeued = await store.recoverEndpoint(scope, key, since);
    log('info', 'endpoint_recovered', { endpoint: key, since: new Date(since).toISOString(), requeued });
    sendJson(res, 202, { requeued });
    return true;
  }
  methodOf(req, path, ['GET']);
  const record = await store.getEndpoint(key);
  sendData(res, {
    key: record.key,
    circuit_state: circuitStateAt(record.circuit_state, record.open_until, Date.now()),
    consecutive_failures: record.consecutive_failures,
    open_until: record.open_until === null ? null : new Date(record.open_until).toISOString(),
  });
  return true;
}
