/**
 * What the operator's view reads from the store: each receiver's health, attempts over time,
 * and the recovery of what a receiver missed (docs/service.md, "Operating").
 */
import type { ClientScope } from './client-store.ts';
import type { CallbackState, CircuitState } from './schema.ts';

/** One receiver (`host:port`) as `GET /v1/endpoints` shows it. */
export interface EndpointHealth {
  key: string;
  /** `half_open` once an open circuit's pause is over, as the next attempt then probes it. */
  circuit_state: CircuitState;
  /** Its callbacks by state, every state present. */
  callbacks: Record<CallbackState, number>;
  last_attempt_at: string | null;
  /** The last failed attempt's error, or `HTTP <status>` when the receiver answered; null if none failed. */
  last_error: string | null;
  /** Share of the last hour's attempts answered 2xx, 0 to 1; null without attempts. */
  success_rate_1h: number | null;
  /** Durations of the last hour's attempts (nearest rank); null without attempts. */
  latency_ms: { p50: number; p95: number } | null;
}

/** The windows of `GET /v1/stats`, with the width of their buckets. */
export const STATS_WINDOWS = {
  '1h': { span: 3_600_000, bucket: 60_000 },
  '24h': { span: 86_400_000, bucket: 900_000 },
} as const;

export type StatsWindow = keyof typeof STATS_WINDOWS;

/** Attempts that started within one bucket: delivered (2xx) or failed (anything else). */
export interface StatsBucket {
  start: string;
  delivered: number;
  failed: number;
  /** Durations of the bucket's attempts (nearest rank); null without attempts. */
  p50_ms: number | null;
  p95_ms: number | null;
}

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
