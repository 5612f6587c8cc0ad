/**
 * The operator's view on both databases: receivers' health (counts, the hour's rate and
 * latency, last attempt and error, worst first), attempts over time in buckets, and recovery
 * of exactly the dead callbacks of a receiver that ended since a time.
 */
import { expect, it } from 'vitest';
import type { AttemptInput, NextCallbackState, Store } from '../../src/store/index.ts';
import { expectStoreError, finishedOperations, LEASE, type SuiteContext } from './helpers.ts';

const MIN = 60_000;
const HOUR = 60 * MIN;
const A = 'http://a.test/hook';
const B = 'http://b.test:8080/hook';
const C = 'https://c.test/hook';

interface Try {
  /** Minutes before now. */
  ago: number;
  duration: number;
  status: number | null;
  error?: string;
  next: NextCallbackState['state'];
}

/**
 * One callback to `url`, tried as `tries` say, one claim per try; returns its id. The store's
 * clock stands at `now` for each try, so a final one ends then.
 */
async function tried(t: SuiteContext, url: string, tries: readonly Try[]): Promise<string> {
  const [id] = await finishedOperations(t.store, 1, url);
  for (const step of tries) {
    const claimed = await t.store.claimCallbacks('w', { limit: 100, leaseMs: LEASE });
    expect(claimed.map((c) => c.callback.id_gen)).toEqual([id]);
    const attempt: AttemptInput = {
      at: t.clock.now - step.ago * MIN,
      duration_ms: step.duration,
      status_code: step.status,
      error: step.error ?? null,
    };
    const next: NextCallbackState =
      step.next === 'retrying' ? { state: 'retrying', next_attempt_at: t.clock.now } : { state: step.next };
    await t.store.recordAttempt(id!, 'w', attempt, next);
  }
  return id!;
}

/** Three receivers: A half well, B down (its circuit open), C well now but gone once. */
async function seed(t: SuiteContext): Promise<void> {
  t.clock.advance(3 * HOUR + 30_000); // 03:00:30 UTC
  await tried(t, A, [
    { ago: 10, duration: 100, status: 500, next: 'retrying' },
    { ago: 9, duration: 10, status: 200, next: 'delivered' },
  ]);
  await tried(t, A, [{ ago: 8, duration: 20, status: 204, next: 'delivered' }]);
  await tried(t, A, [{ ago: 5, duration: 40, status: 503, next: 'dead' }]);
  await tried(t, A, [{ ago: 120, duration: 1000, status: 200, next: 'delivered' }]);
  await tried(t, B, [
    { ago: 3, duration: 5, status: null, error: 'connection_refused: nobody', next: 'retrying' },
  ]);
  await t.store.updateEndpoint('b.test:8080', {
    circuit_state: 'open',
    consecutive_failures: 5,
    open_until: t.clock.now + MIN,
  });
  await tried(t, C, [{ ago: 125, duration: 9, status: 410, next: 'gone' }]);
  await tried(t, C, [{ ago: 2, duration: 7, status: 200, next: 'delivered' }]);
  // Not tried yet: counted, never in the rates.
  await finishedOperations(t.store, 1, A);
}

function counts(given: Partial<Record<string, number>>) {
  return { pending: 0, retrying: 0, delivering: 0, delivered: 0, dead: 0, gone: 0, ...given };
}

export function operatorViewCases(t: SuiteContext): void {
  it('lists every receiver worst first, with counts, the hour’s rate and latency, and its last error', async () => {
    await seed(t);
    const at = (ago: number) => new Date(t.clock.now - ago * MIN).toISOString();
    expect(await t.store.listEndpointHealth('default')).toEqual([
      {
        key: 'b.test:8080',
        circuit_state: 'open',
        callbacks: counts({ retrying: 1 }),
        last_attempt_at: at(3),
        last_error: 'connection_refused: nobody',
        success_rate_1h: 0,
        latency_ms: { p50: 5, p95: 5 },
      },
      {
        key: 'a.test:80',
        circuit_state: 'closed',
        callbacks: counts({ pending: 1, delivered: 3, dead: 1 }),
        last_attempt_at: at(5),
        last_error: 'HTTP 503',
        // 100, 10, 20 and 40 ms within the hour (not the 1000 ms of two hours ago): 2 of 4 were 2xx.
        success_rate_1h: 0.5,
        latency_ms: { p50: 20, p95: 100 },
      },
      {
        key: 'c.test:443',
        circuit_state: 'closed',
        callbacks: counts({ delivered: 1, gone: 1 }),
        last_attempt_at: at(2),
        // Two hours old, a success since: still the last failure.
        last_error: 'HTTP 410',
        success_rate_1h: 1,
        latency_ms: { p50: 7, p95: 7 },
      },
    ]);
  });

  it('shows an open circuit whose pause is over as half-open, and a receiver with no hour as unrated', async () => {
    await seed(t);
    t.clock.advance(2 * HOUR);
    const list = await t.store.listEndpointHealth('default');
    expect(list.map((e) => [e.key, e.circuit_state, e.success_rate_1h, e.latency_ms])).toEqual([
      ['b.test:8080', 'half_open', null, null],
      ['a.test:80', 'closed', null, null],
      ['c.test:443', 'closed', null, null],
    ]);
  });

  it('answers an empty store with no receivers and empty buckets', async () => {
    expect(await t.store.listEndpointHealth('default')).toEqual([]);
    const buckets = await t.store.attemptStats('default', '1h');
    expect(buckets).toHaveLength(60);
    expect(buckets.every((b) => b.delivered === 0 && b.failed === 0 && b.p50_ms === null)).toBe(true);
  });

  it('counts attempts in minute buckets over the hour, the last one holding now', async () => {
    await seed(t);
    const buckets = await t.store.attemptStats('default', '1h');
    expect(buckets).toHaveLength(60);
    expect(buckets[59]!.start).toBe('2025-01-01T03:00:00.000Z');
    expect(buckets[0]!.start).toBe('2025-01-01T02:01:00.000Z');
    const nonEmpty = buckets.filter((b) => b.delivered + b.failed > 0);
    expect(nonEmpty).toEqual([
      { start: '2025-01-01T02:50:00.000Z', delivered: 0, failed: 1, p50_ms: 100, p95_ms: 100 },
      { start: '2025-01-01T02:51:00.000Z', delivered: 1, failed: 0, p50_ms: 10, p95_ms: 10 },
      { start: '2025-01-01T02:52:00.000Z', delivered: 1, failed: 0, p50_ms: 20, p95_ms: 20 },
      { start: '2025-01-01T02:55:00.000Z', delivered: 0, failed: 1, p50_ms: 40, p95_ms: 40 },
      { start: '2025-01-01T02:57:00.000Z', delivered: 0, failed: 1, p50_ms: 5, p95_ms: 5 },
      { start: '2025-01-01T02:58:00.000Z', delivered: 1, failed: 0, p50_ms: 7, p95_ms: 7 },
    ]);
  });

  it('counts attempts in quarter-hour buckets over the day, percentiles by nearest rank', async () => {
    await seed(t);
    const buckets = await t.store.attemptStats('default', '24h');
    expect(buckets).toHaveLength(96);
    expect(buckets[95]!.start).toBe('2025-01-01T03:00:00.000Z');
    const nonEmpty = buckets.filter((b) => b.delivered + b.failed > 0);
    expect(nonEmpty).toEqual([
      // Two hours ago (00:55:30) the 410, 9 ms; at 01:00:30 the 1000 ms success.
      { start: '2025-01-01T00:45:00.000Z', delivered: 0, failed: 1, p50_ms: 9, p95_ms: 9 },
      { start: '2025-01-01T01:00:00.000Z', delivered: 1, failed: 0, p50_ms: 1000, p95_ms: 1000 },
      // 100, 10, 20, 40, 5, 7 ms: the 3rd of six in order is 10, the 6th is 100.
      { start: '2025-01-01T02:45:00.000Z', delivered: 3, failed: 3, p50_ms: 10, p95_ms: 100 },
    ]);
  });

  it('recovers exactly the dead callbacks of the receiver that ended at or after the time given', async () => {
    const store: Store = t.store;
    t.clock.advance(HOUR);
    const before = await tried(t, A, [{ ago: 0, duration: 5, status: 500, next: 'dead' }]);
    t.clock.advance(MIN);
    const since = t.clock.now;
    const atSince = await tried(t, A, [{ ago: 0, duration: 5, status: 500, next: 'dead' }]);
    t.clock.advance(MIN);
    const after = await tried(t, A, [
      { ago: 0, duration: 5, status: null, error: 'response_timeout: x', next: 'retrying' },
      { ago: 0, duration: 5, status: 500, next: 'dead' },
    ]);
    const delivered = await tried(t, A, [{ ago: 0, duration: 5, status: 200, next: 'delivered' }]);
    const gone = await tried(t, A, [{ ago: 0, duration: 5, status: 410, next: 'gone' }]);
    const elsewhere = await tried(t, C, [{ ago: 0, duration: 5, status: 500, next: 'dead' }]);
    const waiting = await tried(t, A, [{ ago: 0, duration: 5, status: 503, next: 'retrying' }]);
    const dueAt = (await store.getCallback(waiting))!.next_attempt_at;

    expect(await store.recoverEndpoint('default', 'a.test:80', since)).toBe(2);
    const state = async (id: string) => (await store.getCallback(id))!;
    for (const id of [atSince, after]) {
      expect(await state(id)).toMatchObject({
        state: 'pending',
        next_attempt_at: t.clock.now,
        round: 2,
        finished_at: null,
      });
    }
    expect((await store.listAttempts(after)).length).toBe(2);
    expect(await state(before)).toMatchObject({ state: 'dead', round: 1 });
    expect((await state(delivered)).state).toBe('delivered');
    expect((await state(gone)).state).toBe('gone');
    expect((await state(elsewhere)).state).toBe('dead');
    // Not dead yet: left to its schedule.
    expect(await state(waiting)).toMatchObject({ state: 'retrying', round: 1, next_attempt_at: dueAt });
    // Queued as a redelivery is: the next claim takes them.
    const claimed = await store.claimCallbacks('w', { limit: 10, leaseMs: LEASE });
    expect(claimed.map((c) => c.callback.id_gen).sort()).toEqual([atSince, after, waiting].sort());
    expect(await store.recoverEndpoint('default', 'a.test:80', since)).toBe(0);
    expect(await store.recoverEndpoint('default', 'nobody.test:80', 0)).toBe(0);
  });

  it('refuses a recovery for a key holding U+0000 or at no time', async () => {
    await expectStoreError(t.store.recoverEndpoint('default', 'a\u0000b', 0), 'invalid_argument');
    await expectStoreError(t.store.recoverEndpoint('default', 'a.test:80', Number.NaN), 'invalid_argument');
  });

  it('records the receiver of each attempt, and the headers sent and answered', async () => {
    const [id] = await finishedOperations(t.store, 1, B);
    await t.store.claimCallbacks('w', { limit: 1, leaseMs: LEASE });
    const huge = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`x-h${i}`, 'v'.repeat(20)]));
    await t.store.recordAttempt(
      id!,
      'w',
      {
        at: t.clock.now,
        duration_ms: 3,
        status_code: 500,
        error: null,
        request_headers: { 'webhook-id': id! },
        response_headers: huge,
      },
      { state: 'dead' },
    );
    const [row] = await t.store.listAttempts(id!);
    expect(row!.endpoint_key).toBe('b.test:8080');
    expect(row!.request_headers).toEqual({ 'webhook-id': id });
    // Kept up to 4 KiB of JSON, whole headers only, in their order.
    const kept = Object.keys(row!.response_headers!);
    expect(kept.length).toBeGreaterThan(100);
    expect(kept.length).toBeLessThan(400);
    expect(kept).toEqual(Object.keys(huge).slice(0, kept.length));
    expect(JSON.stringify(row!.response_headers).length).toBeLessThanOrEqual(4096);
  });
}
