/**
 * Store suite cases about the outbox: leases, attempts and transitions, concurrent claimers,
 * shutdown and restart, redelivery, circuits and fairness. Registered by store-suite.test.ts.
 */
import { expect, it } from 'vitest';
import type { Store } from '../../src/store/index.ts';
import {
  attempt,
  expectStoreError,
  finishedOperations,
  LEASE,
  newOperation,
  type SuiteContext,
  T0,
} from './helpers.ts';

export function callbackCases(t: SuiteContext): void {
  it('leases callbacks and lets another worker take over an expired lease', async () => {
    const { clock, store } = t;
    const ids = await finishedOperations(store, 3);
    const first = await store.claimCallbacks('w1', { limit: 2, leaseMs: LEASE });
    expect(first.map((c) => c.callback.id_gen)).toEqual(ids.slice(0, 2));
    for (const { callback } of first) {
      expect(callback).toMatchObject({
        state: 'delivering',
        lease_owner: 'w1',
        lease_expires_at: T0 + LEASE,
      });
    }
    // No attempt is scheduled while one is in progress.
    expect((await store.getOperation('default', ids[0]!))?.callback).toMatchObject({
      state: 'delivering',
      next_attempt_at: null,
    });
    const second = await store.claimCallbacks('w2', { limit: 10, leaseMs: LEASE });
    expect(second.map((c) => c.callback.id_gen)).toEqual([ids[2]]);
    expect(await store.claimCallbacks('w3', { limit: 10, leaseMs: LEASE })).toEqual([]);

    clock.advance(LEASE);
    const takeover = await store.claimCallbacks('w3', { limit: 10, leaseMs: LEASE });
    expect(takeover.map((c) => c.callback.id_gen).sort()).toEqual([...ids].sort());
    await expectStoreError(
      store.recordAttempt(ids[0]!, 'w1', attempt(clock.now, 200), { state: 'delivered' }),
      'lease_lost',
    );
    const delivered = await store.recordAttempt(ids[0]!, 'w3', attempt(clock.now, 200), {
      state: 'delivered',
    });
    expect(delivered).toMatchObject({
      state: 'delivered',
      lease_owner: null,
      finished_at: clock.now,
      attempt_count: 1,
    });
    await expectStoreError(
      store.recordAttempt(ids[0]!, 'w3', attempt(clock.now, 200), { state: 'delivered' }),
      'lease_lost',
    );
    await expectStoreError(
      store.recordAttempt('no-such-id', 'w3', attempt(clock.now, 200), { state: 'dead' }),
      'not_found',
    );
    expect(await store.listAttempts(ids[0]!)).toHaveLength(1);
  });

  it('moves callbacks through retrying, gone and dead', async () => {
    const { clock, store } = t;
    const [a, b, c] = await finishedOperations(store, 3);
    await store.claimCallbacks('w1', { limit: 3, leaseMs: LEASE });
    const longHead = 'x'.repeat(5000);
    const retrying = await store.recordAttempt(
      a!,
      'w1',
      { ...attempt(T0, null, 'timeout'), response_head: longHead },
      { state: 'retrying', next_attempt_at: T0 + 5000 },
    );
    expect(retrying).toMatchObject({
      state: 'retrying',
      next_attempt_at: T0 + 5000,
      last_error: 'timeout',
      round_attempt_count: 1,
    });
    expect((await store.listAttempts(a!))[0]).toMatchObject({
      seq: 1,
      round: 1,
      worker_id: 'w1',
      error: 'timeout',
    });
    expect((await store.listAttempts(a!))[0]?.response_head).toHaveLength(1024);
    expect(await store.recordAttempt(b!, 'w1', attempt(T0, 410), { state: 'gone' })).toMatchObject({
      state: 'gone',
      last_error: 'HTTP 410',
      next_attempt_at: null,
    });
    expect(
      await store.recordAttempt(c!, 'w1', attempt(T0, null, 'ssrf_blocked: 10.0.0.1'), { state: 'dead' }),
    ).toMatchObject({ state: 'dead' });
    await expectStoreError(
      store.recordAttempt(a!, 'w1', attempt(T0, 500), { state: 'bogus' } as never),
      'invalid_argument',
    );

    expect(await store.nextDueAt()).toBe(T0 + 5000);
    clock.advance(4999);
    expect(await store.claimCallbacks('w2', { limit: 10, leaseMs: LEASE })).toEqual([]);
    expect(
      (await store.claimCallbacks('w2', { limit: 10, leaseMs: LEASE, now: T0 + 5000 })).map(
        (x) => x.callback.id_gen,
      ),
    ).toEqual([a]);
  });

  it('never hands one callback to two concurrent claimers', async () => {
    const { backend, clock, store } = t;
    const other = backend.open({ clock: clock.read });
    for (let round = 0; round < 6; round += 1) {
      const ids = await finishedOperations(store, 24, `https://r${round % 3}.example.com/cb`);
      const claimedBy = async (claimer: Store, worker: string) => {
        const got: string[] = [];
        for (;;) {
          const batch = await claimer.claimCallbacks(worker, { limit: 1 + (got.length % 3), leaseMs: LEASE });
          if (batch.length === 0) return got;
          got.push(...batch.map((c) => c.callback.id_gen));
        }
      };
      const results = await Promise.all([
        claimedBy(store, 'a1'),
        claimedBy(other, 'b1'),
        claimedBy(store, 'a2'),
        claimedBy(other, 'b2'),
      ]);
      const all = results.flat();
      expect(new Set(all).size).toBe(all.length);
      expect(all.sort()).toEqual([...ids].sort());
      for (const id of ids)
        await store.recordAttempt(id, (await store.getCallback(id))!.lease_owner!, attempt(T0, 200), {
          state: 'delivered',
        });
    }
    const ops = await Promise.all(Array.from({ length: 10 }, () => store.createOperation(newOperation())));
    const claims = await Promise.all(
      ops.map((_, i) => (i % 2 ? store : other).claimOperation(`g${i}`, LEASE)),
    );
    const claimedOps = claims.map((o) => o?.id_gen).filter((id) => id !== undefined);
    expect(new Set(claimedOps).size).toBe(claimedOps.length);
  });

  it('gives leases back on shutdown and takes all of them over on restart', async () => {
    const { clock, store } = t;
    const [a, b] = await finishedOperations(store, 2);
    await store.claimCallbacks('w1', { limit: 1, leaseMs: LEASE });
    await store.claimCallbacks('w2', { limit: 1, leaseMs: LEASE });
    const op = await store.createOperation(newOperation());
    await store.claimOperation('w1', LEASE);
    clock.advance(50);
    expect(await store.releaseLeases('w1')).toEqual({ operations: 1, callbacks: 1 });
    expect(await store.getCallback(a!)).toMatchObject({
      state: 'pending',
      next_attempt_at: T0 + 50,
      lease_owner: null,
    });
    expect(await store.getOperationRecord('default', op.id_gen)).toMatchObject({
      state: 'queued',
      lease_owner: null,
    });
    expect(await store.getCallback(b!)).toMatchObject({ state: 'delivering', lease_owner: 'w2' });
    expect(await store.recoverLeases()).toEqual({ operations: 0, callbacks: 1 });
    expect(await store.getCallback(b!)).toMatchObject({ state: 'pending', lease_owner: null });
    expect((await store.claimCallbacks('w3', { limit: 5, leaseMs: LEASE })).length).toBe(2);
  });

  it('renews a lease for the worker that holds it only, so a long send is not taken over', async () => {
    const { clock, store } = t;
    const [id] = await finishedOperations(store, 1);
    await store.claimCallbacks('w1', { limit: 1, leaseMs: LEASE });
    clock.advance(LEASE - 1);
    const renewedAt = clock.now;
    expect(await store.renewCallbackLease(id!, 'w1', LEASE)).toBe(true);
    expect(await store.renewCallbackLease(id!, 'w2', LEASE)).toBe(false);
    clock.advance(LEASE - 1);
    // Past the first lease, within the renewed one: due to nobody, w1 included.
    expect(await store.claimCallbacks('w1', { limit: 5, leaseMs: LEASE })).toEqual([]);
    expect(await store.claimCallbacks('w2', { limit: 5, leaseMs: LEASE })).toEqual([]);
    expect(await store.getCallback(id!)).toMatchObject({
      state: 'delivering',
      lease_owner: 'w1',
      lease_expires_at: renewedAt + LEASE,
    });
    clock.advance(LEASE);
    const [taken] = await store.claimCallbacks('w2', { limit: 5, leaseMs: LEASE });
    expect(taken?.callback.id_gen).toBe(id);
    // Taken over: the first worker's renewal no longer holds it.
    expect(await store.renewCallbackLease(id!, 'w1', LEASE)).toBe(false);
  });

  it('redelivers a finished callback with its history kept', async () => {
    const { clock, store } = t;
    const [id] = await finishedOperations(store, 1);
    await store.claimCallbacks('w1', { limit: 1, leaseMs: LEASE });
    await expectStoreError(store.redeliver('default', id!), 'conflict');
    await store.recordAttempt(id!, 'w1', attempt(T0, 500), { state: 'dead' });
    clock.advance(1000);
    const again = await store.redeliver('default', id!);
    expect(again).toMatchObject({
      state: 'pending',
      next_attempt_at: T0 + 1000,
      round: 2,
      round_attempt_count: 0,
      attempt_count: 1,
      finished_at: null,
    });
    await store.claimCallbacks('w1', { limit: 1, leaseMs: LEASE });
    await store.recordAttempt(id!, 'w1', attempt(T0 + 1000, 200), { state: 'delivered' });
    expect((await store.listAttempts(id!)).map((a) => [a.seq, a.round, a.status_code])).toEqual([
      [1, 1, 500],
      [2, 2, 200],
    ]);
    expect((await store.getOperation('default', id!))?.callback.attempts).toHaveLength(2);

    // One still waiting for a retry starts a new round too, so it keeps every try of its schedule.
    const [waiting] = await finishedOperations(store, 1);
    await store.claimCallbacks('w1', { limit: 1, leaseMs: LEASE });
    await store.recordAttempt(waiting!, 'w1', attempt(clock.now, 503), {
      state: 'retrying',
      next_attempt_at: clock.now + 3_600_000,
    });
    expect(await store.redeliver('default', waiting!)).toMatchObject({
      state: 'pending',
      next_attempt_at: clock.now,
      round: 2,
      round_attempt_count: 0,
      attempt_count: 1,
    });
    // One not tried in its round yet is just made due now: a second ask opens no empty round.
    clock.advance(1000);
    expect(await store.redeliver('default', waiting!)).toMatchObject({
      state: 'pending',
      next_attempt_at: clock.now,
      round: 2,
      round_attempt_count: 0,
    });

    await expectStoreError(store.redeliver('default', 'no-such-id'), 'not_found');
    const queued = await store.createOperation(newOperation());
    await expectStoreError(store.redeliver('default', queued.id_gen), 'conflict');
  });

  it('keeps receiver circuits and passes over open ones', async () => {
    const { clock, store } = t;
    expect(await store.getEndpoint('down.example:443')).toMatchObject({
      circuit_state: 'closed',
      consecutive_failures: 0,
      updated_at: null,
    });
    const [down] = await finishedOperations(store, 1, 'https://down.example/cb');
    const [up] = await finishedOperations(store, 1, 'https://up.example/cb');
    const open = { circuit_state: 'open' as const, consecutive_failures: 5, open_until: T0 + 60_000 };
    expect(await store.updateEndpoint('down.example:443', open)).toEqual({
      key: 'down.example:443',
      ...open,
      updated_at: T0,
    });
    expect(await store.getEndpoint('down.example:443')).toMatchObject(open);
    expect(
      (await store.claimCallbacks('w1', { limit: 5, leaseMs: LEASE })).map((c) => c.callback.id_gen),
    ).toEqual([up]);
    await store.recordAttempt(up!, 'w1', attempt(T0, 200), { state: 'delivered' });
    // Due since T0, but passed over until the circuit may close.
    expect(await store.nextDueAt('callback')).toBe(T0 + 60_000);
    clock.advance(60_000);
    await store.updateEndpoint('down.example:443', {
      circuit_state: 'half_open',
      consecutive_failures: 5,
      open_until: null,
    });
    expect(
      (await store.claimCallbacks('w1', { limit: 5, leaseMs: LEASE })).map((c) => c.callback.id_gen),
    ).toEqual([down]);
  });

  it('shares a claim fairly between receivers and caps each one in flight', async () => {
    const { store } = t;
    const busy = await finishedOperations(store, 5, 'https://busy.example/cb');
    const [quiet] = await finishedOperations(store, 1, 'https://quiet.example/cb');
    const first = await store.claimCallbacks('w1', { limit: 3, leaseMs: LEASE, perEndpointLimit: 2 });
    expect(first.map((c) => c.callback.id_gen).sort()).toEqual([busy[0], busy[1], quiet].sort());
    expect(await store.claimCallbacks('w2', { limit: 3, leaseMs: LEASE, perEndpointLimit: 2 })).toEqual([]);
    await store.recordAttempt(busy[0]!, 'w1', attempt(T0, 200), { state: 'delivered' });
    expect(
      (await store.claimCallbacks('w2', { limit: 3, leaseMs: LEASE, perEndpointLimit: 2 })).map(
        (c) => c.callback.id_gen,
      ),
    ).toEqual([busy[2]]);
    // Without a cap the batch still takes receivers in turn before a second of the same one.
    const more = await finishedOperations(store, 1, 'https://other.example/cb');
    const next = await store.claimCallbacks('w3', { limit: 2, leaseMs: LEASE });
    expect(next.map((c) => c.callback.id_gen).sort()).toEqual([busy[3], more[0]].sort());
  });

  it('passes over a receiver at its cap even when its backlog fills the claim window', async () => {
    const { store } = t;
    const busy = await finishedOperations(store, 40, 'https://busy.example/cb');
    const [quiet] = await finishedOperations(store, 1, 'https://quiet.example/cb');
    const options = { limit: 3, leaseMs: LEASE, perEndpointLimit: 2 };
    // The window (the 30 oldest due: ten times the claim) holds only the busy receiver's callbacks.
    expect((await store.claimCallbacks('w1', options)).map((c) => c.callback.id_gen)).toEqual(
      busy.slice(0, 2),
    );
    expect((await store.claimCallbacks('w1', options)).map((c) => c.callback.id_gen)).toEqual([quiet]);
  });

  it('finds the other receivers past a backlog at its cap longer than a claim walks in time order', async () => {
    const { clock, store } = t;
    // More than a claim of one walks (its window and room, and WALK_ROOM past them) on either database.
    const busy: string[] = [];
    for (let from = 0; from < 3_200; from += 100) {
      const batch = await Promise.all(
        Array.from({ length: 100 }, () => finishedOperations(store, 1, 'https://busy.example/cb')),
      );
      busy.push(...batch.flat());
    }
    clock.advance(1);
    const [quiet] = await finishedOperations(store, 1, 'https://quiet.example/cb');
    clock.advance(1);
    const [later] = await finishedOperations(store, 1, 'https://later.example/cb');
    const capped = { leaseMs: LEASE, perEndpointLimit: 2 };
    const ids = (claimed: { callback: { id_gen: string } }[]) => claimed.map((c) => c.callback.id_gen);
    expect(ids(await store.claimCallbacks('w1', { ...capped, limit: 2 }))).toEqual(busy.slice(0, 2));
    // busy is at its cap, and its 3,198 due callbacks come first in time.
    expect(ids(await store.claimCallbacks('w1', { ...capped, limit: 1 }))).toEqual([quiet]);
    clock.advance(1);
    await store.recordAttempt(quiet!, 'w1', attempt(clock.now, 503), {
      state: 'retrying',
      next_attempt_at: clock.now,
    });
    // The pending callbacks are listed by receiver, merged with the retry by time.
    expect(ids(await store.claimCallbacks('w1', { ...capped, limit: 5 }))).toEqual([later, quiet]);
    expect(await store.claimCallbacks('w1', { ...capped, limit: 5 })).toEqual([]);
  });

  it('looks ten times the claim past the oldest due callbacks for other receivers', async () => {
    const { store } = t;
    const a = await finishedOperations(store, 28, 'https://a.example/cb');
    const [b] = await finishedOperations(store, 1, 'https://b.example/cb');
    // A claim of 2 looks at the 20 oldest: all a's, so b waits its turn.
    const two = await store.claimCallbacks('w1', { limit: 2, leaseMs: LEASE });
    expect(two.map((c) => c.callback.id_gen)).toEqual(a.slice(0, 2));
    // A claim of 3 looks at the 30 oldest due, b the 27th of them: b goes before a's second.
    const three = await store.claimCallbacks('w1', { limit: 3, leaseMs: LEASE });
    expect(three.map((c) => c.callback.id_gen)).toEqual([a[2], a[3], b]);
  });

  it('counts the queue by state and says when work is next due', async () => {
    const { store } = t;
    expect(await store.nextDueAt()).toBeNull();
    await finishedOperations(store, 2);
    await store.createOperation(newOperation());
    await store.claimCallbacks('w1', { limit: 1, leaseMs: LEASE });
    const depth = await store.queueDepth();
    expect(depth.operations).toEqual({ queued: 1, running: 0, succeeded: 0, failed: 2 });
    expect(depth.callbacks).toEqual({
      pending: 1,
      delivering: 1,
      retrying: 0,
      delivered: 0,
      dead: 0,
      gone: 0,
    });
    expect(await store.nextDueAt()).toBe(T0);
    expect(await store.nextDueAt('callback')).toBe(T0);
    await store.claimCallbacks('w1', { limit: 1, leaseMs: LEASE });
    // Only leases left among callbacks; the queued operation is a generator's business.
    expect(await store.nextDueAt('callback')).toBe(T0 + LEASE);
    expect(await store.nextDueAt('operation')).toBe(T0);
  });
}
