/**
 * When to try a callback again (see Delivery in docs/service.md): after the first try, 5 s,
 * 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, each ±20 % so that many callbacks failing together
 * do not come back together; a `Retry-After` from the receiver is honoured within bounds, as
 * the earliest time to come back (RFC 9110 §10.2.3): it can put an attempt off, never bring one
 * forward, so a receiver answering `Retry-After: 1` cannot use up the schedule's days of tries
 * in seconds.
 */

import type { NextCallbackState } from '../store/index.ts';
import type { AttemptResult } from './callback-sender.ts';

export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
];

export interface RetryPolicy {
  /** Delays after the 1st, 2nd, … failed attempt; after the last, the callback is dead. */
  schedule: readonly number[];
  /** Fraction of random spread around each delay (0.2 = ±20 %). */
  jitter: number;
  /** Bounds a `Retry-After` is held within. */
  retryAfterMinMs: number;
  retryAfterMaxMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  schedule: DEFAULT_RETRY_SCHEDULE_MS,
  jitter: 0.2,
  retryAfterMinMs: 1_000,
  retryAfterMaxMs: 12 * 3_600_000,
});

/**
 * The delay before the next attempt after `failedAttempts` failures, or null when the
 * schedule is used up (the callback is dead): the schedule's, or the receiver's
 * `Retry-After` (held within the policy's bounds) when that is longer.
 *
 * @example
 * nextRetryDelay(DEFAULT_RETRY_POLICY, 1); // about 5000 (4000 to 6000)
 * nextRetryDelay(DEFAULT_RETRY_POLICY, 1, 600_000); // 600000
 * nextRetryDelay(DEFAULT_RETRY_POLICY, 8); // null
 */
export function nextRetryDelay(
  policy: RetryPolicy,
  failedAttempts: number,
  retryAfterMs: number | null = null,
  random: () => number = Math.random,
): number | null {
  const base = policy.schedule[failedAttempts - 1];
  if (base === undefined) return null;
  const spread = base * policy.jitter;
  const scheduled = Math.max(0, Math.round(base - spread + random() * 2 * spread));
  if (retryAfterMs === null) return scheduled;
  const asked = Math.min(policy.retryAfterMaxMs, Math.max(policy.retryAfterMinMs, retryAfterMs));
  return Math.max(scheduled, asked);
}

/**
 * Where a callback goes after an attempt: delivered, gone, dead when refused or when the
 * schedule is used up, else retrying after {@link nextRetryDelay}.
 *
 * @example
 * nextCallbackState(DEFAULT_RETRY_POLICY, 0, attempt); // { state: 'retrying', next_attempt_at: … } for a 500
 */
export function nextCallbackState(
  policy: RetryPolicy,
  failedBefore: number,
  attempt: Pick<AttemptResult, 'verdict' | 'retry_after_ms'>,
  now = Date.now(),
): NextCallbackState {
  switch (attempt.verdict) {
    case 'delivered':
      return { state: 'delivered' };
    case 'gone':
      return { state: 'gone' };
    case 'refused':
      return { state: 'dead' };
    case 'retry': {
      const delay = nextRetryDelay(policy, failedBefore + 1, attempt.retry_after_ms);
      return delay === null ? { state: 'dead' } : { state: 'retrying', next_attempt_at: now + delay };
    }
  }
}
