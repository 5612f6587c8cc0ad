/**
 * A worker's life around the queue, on both stores: wake-ups are not lost, a graceful stop hands
 * its callbacks over at once, redelivery sends again, and the retention sweep removes result
 * files of final callbacks only.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DeliveryFixture,
  deliveryBackends,
  FAST_RETRY,
  instrument,
  waitFor,
  waitForStates,
} from './harness.ts';
import { type RecordingReceiver, startRecordingReceiver } from './receivers.ts';

const backends = await deliveryBackends('delivery worker lifecycle');

describe.each(backends)('delivery worker lifecycle on $name', (kind) => {
  let f: DeliveryFixture;
  let receiver: RecordingReceiver;

  beforeEach(async () => {
    f = await DeliveryFixture.create(kind);
    receiver = await startRecordingReceiver();
    f.defer(() => receiver.close());
  });
  afterEach(async () => {
    await f.dispose();
  });

  it('does not lose a wake-up that arrives while it asks the store when work is due', async () => {
    const slow = instrument(f.store);
    let release = () => {};
    slow.holdNextDueAt = new Promise<void>((resolve) => (release = resolve));
    const asked = slow.nextDueAtCalled();
    await f.worker({ store: slow.store });
    // The worker found nothing due and is asking when something will be; meanwhile work comes.
    await asked;
    // Heard here means heard by the worker too: the store tells its listeners in turn.
    const heard = new Promise<void>((resolve) => {
      const subscription = f.store.onWork((event) => {
        if (event.kind !== 'callback') return;
        subscription();
        resolve();
      });
    });
    const id = await f.finished(receiver.url, 'error');
    await heard;
    slow.holdNextDueAt = null;
    release();
    // Its answer ("nothing is due") is stale by now; a minute's sleep on it would miss the work.
    await waitForStates(f, [id], 'delivered', 2_000);
  });

  it('stops promptly even when asked while it is between claims', async () => {
    const slow = instrument(f.store);
    let release = () => {};
    slow.holdNextDueAt = new Promise<void>((resolve) => (release = resolve));
    const asked = slow.nextDueAtCalled();
    const worker = await f.worker({ store: slow.store });
    await asked;
    const stopped = worker.stop(0);
    slow.holdNextDueAt = null;
    release();
    const started = Date.now();
    await stopped;
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('ends its open requests when the grace period is over and hands the callbacks over at once', async () => {
    // The first worker's requests get no answer, so they are still in flight when it stops.
    receiver.script = (r) => (r.n <= 3 ? 'hang' : 'real');
    const ids = await f.finishedMany(3, receiver.url);
    const first = await f.worker({ workerId: 'first', concurrency: 3, leaseMs: 60_000 });
    await waitFor('three requests in flight', () => receiver.requests.length === 3);
    const stopping = Date.now();
    await first.stop(200);
    expect(Date.now() - stopping).toBeLessThan(2_000);
    // Ended (the connections closed without an answer), not left open for another worker to overlap.
    await waitFor(
      'the receiver to see the requests end',
      () => receiver.requests.every((r) => r.endedAt !== null && r.status === null),
      1_000,
    );
    for (const id of ids) {
      const callback = await f.store.getCallback(id);
      expect(callback).toMatchObject({ state: 'retrying', lease_owner: null });
      expect(callback!.next_attempt_at!).toBeLessThanOrEqual(Date.now());
    }

    // The leases run for a minute; the second worker must not wait for them.
    const handedOver = Date.now();
    await f.worker({ workerId: 'second', leaseMs: 60_000 });
    await waitForStates(f, ids, 'delivered', 3_000);
    expect(Date.now() - handedOver).toBeLessThan(3_000);
    for (const id of ids) {
      const attempts = await f.store.listAttempts(id);
      expect(attempts.map((a) => [a.worker_id, a.status_code])).toEqual([
        ['first', null],
        ['second', 200],
      ]);
      expect(attempts[0]?.error).toMatch(/^cancelled: /);
    }
    expect(receiver.overlaps).toEqual([]);
    // A stop is not the receiver's fault: no failure counted against it.
    expect((await f.store.getEndpoint(`127.0.0.1:${receiver.port}`)).consecutive_failures).toBe(0);
  });

  it('does not count a send cut off by its own stop against the retry schedule', async () => {
    receiver.script = (r) => (r.n === 1 ? 'hang' : r.n === 2 ? { status: 500 } : 'real');
    const id = await f.finished(receiver.url, 'error');
    // One retry in all: the cut-off send must not be what uses it up.
    const retry = { ...FAST_RETRY, schedule: [50] };
    const first = await f.worker({ workerId: 'first', leaseMs: 60_000, retry });
    await waitFor('the request in flight', () => receiver.requests.length === 1);
    await first.stop(100);
    expect(await f.store.getCallback(id)).toMatchObject({ state: 'retrying', round_attempt_count: 0 });
    await f.worker({ workerId: 'second', retry });
    await waitForStates(f, [id], 'delivered', 3_000);
    const attempts = await f.store.listAttempts(id);
    expect(attempts.map((a) => a.status_code)).toEqual([null, 500, 200]);
    expect(attempts[0]?.error).toMatch(/^cancelled: /);
  });

  it('keeps the lease of a send that outlasts it, so the callback is not sent again beside it', async () => {
    // Within every timeout of the sender, yet far longer than the lease.
    receiver.script = () => ({ status: 200, delayMs: 1_500 });
    const id = await f.finished(receiver.url, 'error');
    await f.worker({ workerId: 'slow-sender', leaseMs: 300 });
    await waitForStates(f, [id], 'delivered', 10_000);
    expect(receiver.requests.length).toBe(1);
    expect(receiver.overlaps).toEqual([]);
    expect((await f.store.getOperation('default', id))?.callback.attempts).toHaveLength(1);
  });

  it('waits for deliveries that finish within the grace period and records them', async () => {
    receiver.script = () => ({ status: 200, body: 'ok', delayMs: 300 });
    const [id] = await f.finishedMany(1, receiver.url);
    const worker = await f.worker({ workerId: 'patient' });
    await waitFor('the request', () => receiver.requests.length === 1);
    await worker.stop(5_000);
    const attempts = await f.store.listAttempts(id!);
    expect(attempts.map((a) => [a.worker_id, a.status_code])).toEqual([['patient', 200]]);
    expect(await f.state(id!)).toBe('delivered');
  });

  it('goes on delivering when one attempt cannot be recorded, and gives that one up', async () => {
    const url = (id: string) => receiver.url(id);
    const stuck = await f.finished(url, 'error');
    await f.backend.breakAttemptInserts(stuck);
    const others = await f.finishedMany(3, url);
    await f.worker({ concurrency: 4 });
    // Sent in the same rounds as the one that cannot be recorded, the others are recorded.
    await waitForStates(f, others, 'delivered');
    await waitFor('the worker to give the stuck attempt up', () =>
      f.workerErrors.some((e) => String(e).includes(`gave up recording an attempt of ${stuck}`)),
    );
    // Still leased: taken over, and sent again, once the lease runs out.
    expect(await f.state(stuck)).toBe('delivering');
    const later = await f.finished(url);
    await waitForStates(f, [later], 'delivered');
    expect(receiver.requests.filter((r) => r.id === stuck)).toHaveLength(1);
  });

  it('sends a delivered callback again on redeliver, in a new round', async () => {
    const id = await f.finished(receiver.url);
    await f.worker();
    await waitForStates(f, [id], 'delivered');
    await f.store.redeliver('default', id);
    await waitFor('the second delivery', async () => (await f.store.listAttempts(id)).length === 2);
    await waitForStates(f, [id], 'delivered');
    expect(receiver.countsById().get(id)).toBe(2);
    expect(receiver.outcomes.map((o) => o.verdict)).toEqual(['accepted', 'duplicate']);
    const attempts = await f.store.listAttempts(id);
    expect(attempts.map((a) => [a.round, a.status_code])).toEqual([
      [1, 200],
      [2, 200],
    ]);
    expect(attempts[1]?.response_head).toContain('"duplicate":true');
  });

  it('sweeps result files of final callbacks after the retention; a later redeliver ends result_missing', async () => {
    const retentionMs = 60_000;
    // One receiver answers 503 and is retried only after a minute: that callback stays retrying.
    const waiting = await startRecordingReceiver({ script: () => ({ status: 503 }) });
    f.defer(() => waiting.close());
    const delivered = await f.finished(receiver.url);
    const retrying = await f.finished(waiting.url);
    const worker = await f.worker({
      retentionMs,
      retry: { schedule: [60_000], jitter: 0, retryAfterMinMs: 0, retryAfterMaxMs: 0 },
    });
    await waitForStates(f, [delivered], 'delivered');
    await waitForStates(f, [retrying], 'retrying');
    const keyOf = async (id: string) => (await f.store.getOperationRecord('default', id))!.result!.key;

    expect(await worker.sweepResults(Date.now())).toBe(0);
    expect(await f.blobs.size(await keyOf(delivered))).not.toBeNull();

    expect(await worker.sweepResults(Date.now() + retentionMs + 1_000)).toBe(1);
    expect(await f.blobs.size(await keyOf(delivered))).toBeNull();
    // Not final yet: its file is still needed, however old.
    expect(await f.blobs.size(await keyOf(retrying))).not.toBeNull();

    await f.store.redeliver('default', delivered);
    await waitForStates(f, [delivered], 'dead');
    const attempts = await f.store.listAttempts(delivered);
    expect(attempts).toHaveLength(2);
    expect(attempts[1]).toMatchObject({ round: 2, status_code: null });
    expect(attempts[1]?.error).toMatch(/^result_missing/);
    expect(receiver.countsById().get(delivered)).toBe(1);
  });
});
