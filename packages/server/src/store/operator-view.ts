/**
 * What the operator's view reads from the store: each receiver's health, attempts over time,
 * and the recovery of what a receiver missed (docs/service.md, "Operating").
 */
import type { EndpointHealth, StatsBucket } from '../client/api-types.ts';
import type { ClientScope } from './client-store.ts';
import type { CircuitState } from './schema.ts';

/** One receiver (`host:port`) and one bucket of attempts, as the API answers them. */
export type { EndpointHealth, StatsBucket } from '../client/api-types.ts';

/** The windows of `GET /v1/stats`, with the width of their buckets. */
export const STATS_WINDOWS = {
  '1h': { span: 3_600_000, bucket: 60_000 },
  '24h': { span: 86_400_000, bucket: 900_000 },
} as const;

export type StatsWindow = keyof typeof STATS_WINDOWS;

/** The store's part of the operator's view. */
export interface OperatorViewStore {
  /**
   * Every receiver `scope`'s callbacks went to, worst first, counted over those callbacks; for
   * `ALL_CLIENTS` every receiver with callbacks or a circuit. The circuit is the receiver's own.
   */
  listEndpointHealth(scope: ClientScope): Promise<EndpointHealth[]>;
  /** `scope`'s attempts of the window in equal buckets, oldest first, the last one holding now. */
  attemptStats(scope: ClientScope, window: StatsWindow): Promise<StatsBucket[]>;
  /**
   * Queues again, as `redeliver` would, every `dead` callback of `scope` to receiver `key` that
   * ended at or after `since` (Unix ms); how many were queued.
   */
  recoverEndpoint(scope: ClientScope, key: string, since: number): Promise<number>;
}

/**
 * The circuit as it acts at `now`: an open one whose pause is over has its next attempt as the
 * probe, whenever one is due, so it shows `half_open` already, although the store marks it so
 * only when it claims that attempt.
 */
export function circuitStateAt(state: CircuitState, openUntil: number | null, now: number): CircuitState {
  return state === 'open' && !(openUntil !== null && openUntil > now) ? 'half_open' : state;
}
