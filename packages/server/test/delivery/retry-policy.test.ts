/**
 * The retry schedule and Retry-After, as pure functions: which delay follows which failure, the
 * jitter's bounds, when the schedule is used up, and which Retry-After texts count.
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY_POLICY,
  DEFAULT_RETRY_SCHEDULE_MS,
  nextCallbackState,
  nextRetryDelay,
  parseRetryAfter,
  type RetryPolicy,
} from '../../src/delivery/index.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

describe('nextRetryDelay', () => {
  it('follows the documented default schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect(DEFAULT_RETRY_SCHEDULE_MS).toEqual([
      5_000,
      5 * MINUTE,
      30 * MINUTE,
      2 * HOUR,
      5 * HOUR,
      10 * HOUR,
      10 * HOUR,
    ]);
    const middle = () => 0.5;
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => nextRetryDelay(DEFAULT_RETRY_POLICY, n, null, middle))).toEqual(
      DEFAULT_RETRY_SCHEDULE_MS,
    );
  });

  it('spreads each delay by ±20 % at most', () => {
    expect(nextRetryDelay(DEFAULT_RETRY_POLICY, 1, null, () => 0)).toBe(4_000);
    expect(nextRetryDelay(DEFAULT_RETRY_POLICY, 1, null, () => 0.999999)).toBe(6_000);
    expect(nextRetryDelay(DEFAULT_RETRY_POLICY, 2, null, () => 0)).toBe(4 * MINUTE);
  });

  it('is used up after the last delay: the callback is then dead', () => {
    expect(nextRetryDelay(DEFAULT_RETRY_POLICY, 7)).not.toBeNull();
    expect(nextRetryDelay(DEFAULT_RETRY_POLICY, 8)).toBeNull();
    // A Retry-After does not extend a used-up schedule.
    expect(nextRetryDelay(DEFAULT_RETRY_POLICY, 8, 1_000)).toBeNull();
  });

  /** No jitter, and Retry-After held within 50 ms to 1 s. */
  const policy: RetryPolicy = {
    schedule: [100, 200],
    jitter: 0,
    retryAfterMinMs: 50,
    retryAfterMaxMs: 1_000,
  };

  it('waits as long as Retry-After asks, within the policy bounds, when that is longer than the schedule', () => {
    expect(nextRetryDelay(policy, 1, 700)).toBe(700);
    expect(nextRetryDelay(policy, 2, 3_600_000)).toBe(1_000);
    expect(nextRetryDelay(DEFAULT_RETRY_POLICY, 2, 3_600_000)).toBe(3_600_000);
  });

  it('never retries sooner than the schedule for a shorter Retry-After', () => {
    expect(nextRetryDelay(policy, 1, 5)).toBe(100);
    expect(nextRetryDelay(policy, 2, 150)).toBe(200);
    // The default's 5 min after the second failure stands against `Retry-After: 1`.
    const delay = nextRetryDelay(DEFAULT_RETRY_POLICY, 2, 1_000)!;
    expect(delay).toBeGreaterThanOrEqual(240_000);
    expect(delay).toBeLessThanOrEqual(360_000);
  });
});

describe('nextCallbackState', () => {
  const policy: RetryPolicy = {
    schedule: [100, 200],
    jitter: 0,
    retryAfterMinMs: 10,
    retryAfterMaxMs: 1_000,
  };
  const now = 1_000_000;
  it.each([
    ['a 2xx', 'delivered', 0, null, { state: 'delivered' }],
    ['a 410', 'gone', 0, null, { state: 'gone' }],
    ['a refused URL', 'refused', 0, null, { state: 'dead' }],
    ['a first failure', 'retry', 0, null, { state: 'retrying', next_attempt_at: now + 100 }],
    ['a second failure', 'retry', 1, null, { state: 'retrying', next_attempt_at: now + 200 }],
    ['a failure asking for later', 'retry', 0, 500, { state: 'retrying', next_attempt_at: now + 500 }],
    ['a failure past the schedule', 'retry', 2, null, { state: 'dead' }],
    ['a failure past the schedule asking for later', 'retry', 2, 500, { state: 'dead' }],
  ] as const)('after %s', (_, verdict, failedBefore, retryAfter, expected) => {
    expect(nextCallbackState(policy, failedBefore, { verdict, retry_after_ms: retryAfter }, now)).toEqual(
      expected,
    );
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');

  it.each([
    ['120', 120_000],
    [' 5 ', 5_000],
    ['0', 0],
    ['Wed, 01 Jan 2025 00:02:00 GMT', 120_000],
    ['Wednesday, 01-Jan-25 00:00:30 GMT', 30_000],
    ['Tue, 31 Dec 2024 23:00:00 GMT', 0],
    // Beyond every bound (nextRetryDelay holds it at the longest), not ignored.
    ['99999999999', 99_999_999_999_000],
    ['9'.repeat(400), Number.MAX_SAFE_INTEGER],
  ])('reads %j as %d ms', (text, ms) => {
    expect(parseRetryAfter(text, now)).toBe(ms);
  });

  // Not delta-seconds and not an HTTP-date; some of them Date.parse would take as days of 2001.
  it.each(['1.5', '-1', '120s', 'soon', '', '0x10', '1e3'])('ignores %j', (text) => {
    expect(parseRetryAfter(text, now)).toBeNull();
  });

  it('reads an asctime date, which has no zone, as GMT whatever the local zone', () => {
    const zone = process.env.TZ;
    process.env.TZ = 'America/New_York';
    try {
      expect(parseRetryAfter('Wed Jan  1 00:01:00 2025', now)).toBe(60_000);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it('has nothing to read when the header is absent', () => {
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });
});
