/**
 * Store suite cases about a worker's round trip, `settleCallbacks`: attempts recorded in a
 * batch, receiver circuits moved by them in order, and the claim made in the same transaction.
 * Registered by store-suite.test.ts.
 */
import { expect, it } from 'vitest';
import {
  type CircuitPolicy,
  type EndpointUpdate,
  isStoreError,
  nextCircuit,
  type Settlement,
  type Store,
} from '../../src/store/index.ts';
import { attempt, finishedOperations, LEASE, recordWakeUps, type SuiteContext, T0 } from './helpers.ts';

const POLICY: CircuitPolicy = { failureThreshold: 2, openMs: 1_000, maxOpenMs: 4_000 };

function settlement(id: string, status: number | null, circuit: Settlement['circuit']): Settlement {
  const delivered = status !== null && status >= 200 && status < 300;
  return {
    id_gen: id,
    attempt: attempt(T0, status, status === null ? 'connection_refused: nothing listens' : null),
    next: delivered ? { state: 'delivered' } : { state: 'retrying', next_attempt_at: T0 + 5_000 },
    circuit,
  };
}

async function claimAll(store: Store, worker: string, limit = 10) {
  return (await store.claimCallbacks(worker, { limit, leaseMs: LEASE })).map((c) => c.callback.id_gen);
}

export function settleCases(t: SuiteContext): void {
  it('records a batch of attempts, and refuses only those whose lease was lost', async () => {
    const { clock, store } = t;
    const ids = await finishedOperations(store, 3);
    expect(await claimAll(store, 'w1', 2)).toEqual(ids.slice(0, 2));
    expect(await claimAll(store, 'w2', 1)).toEqual([ids[2]]);
    const result = await store.settleCallbacks(
      'w1',
      [
        settlement(ids[0]!, 200, 'answered'),
        settlement(ids[2]!, 200, 'answered'),
        settlement(ids[1]!, 503, 'failed'),
      ],
      { circuit: POLICY },
    );
    expect(result.claimed).toEqual([]);
    expect(result.settled[0]).toMatchObject({ id_gen: ids[0], state: 'delivered', attempt_count: 1 });
    expect(isStoreError(result.settled[1]) && result.settled[1].code).toBe('lease_lost');
    expect(result.settled[2]).toMatchObject({
      id_gen: ids[1],
      state: 'retrying',
      next_attempt_at: T0 + 5_000,
      lease_owner: null,
    });
    expect(await store.listAttempts(ids[1]!)).toEqual([
      expect.objectContaining({ seq: 1, status_code: 503, worker_id: 'w1', at: T0 }),
    ]);
    // The other worker's lease is untouched and its attempt is still its own to record.
    expect(await store.getCallback(ids[2]!)).toMatchObject({ state: 'delivering', lease_owner: 'w2' });
    expect(await store.listAttempts(ids[2]!)).toEqual([]);
    clock.advance(1);
    const own = await store.settleCallbacks('w2', [settlement(ids[2]!, 200, 'answered')], {
      circuit: POLICY,
    });
    expect(own.settled[0]).toMatchObject({ state: 'delivered' });
  });

  it('moves a receiver circuit by its attempts in order, opening it at the threshold', async () => {
    const { store } = t;
    const key = 'flaky.example:443';
    const ids = await finishedOperations(store, 4, 'https://flaky.example/cb');
    await claimAll(store, 'w1');
    // answered, failed, failed: the answer comes first, so two failures in a row open it.
    await store.settleCallbacks(
      'w1',
      [
        settlement(ids[0]!, 200, 'answered'),
        settlement(ids[1]!, 500, 'failed'),
        settlement(ids[2]!, null, 'failed'),
      ],
      { circuit: POLICY },
    );
    expect(await store.getEndpoint(key)).toMatchObject({
      circuit_state: 'open',
      consecutive_failures: 2,
      open_until: T0 + 1_000,
    });
    // An attempt that never reached the receiver (null) leaves the circuit as it is.
    await store.settleCallbacks('w1', [{ ...settlement(ids[3]!, null, null), next: { state: 'dead' } }], {
      circuit: POLICY,
    });
    expect(await store.getEndpoint(key)).toMatchObject({ circuit_state: 'open', consecutive_failures: 2 });
  });

  it('parks a receiver’s waiting callbacks at the end of its pause when its circuit opens', async () => {
    const { clock, store } = t;
    const ids = await finishedOperations(store, 5, 'https://down.example/cb');
    expect(await claimAll(store, 'w1', 2)).toEqual(ids.slice(0, 2));
    const [other] = await finishedOperations(store, 1, 'https://up.example/cb');
    const early = {
      ...settlement(ids[0]!, 503, 'failed'),
      next: { state: 'retrying', next_attempt_at: T0 + 500 },
    };
    await store.settleCallbacks('w1', [early as Settlement, settlement(ids[1]!, 503, 'failed')], {
      circuit: POLICY,
    });
    expect(await store.getEndpoint('down.example:443')).toMatchObject({
      circuit_state: 'open',
      open_until: T0 + 1_000,
    });
    const due = async (id: string) => (await store.getCallback(id))?.next_attempt_at;
    // The waiting first attempts and a retry due within the pause go at its end; a retry due
    // after it keeps its time, and another receiver's callback is not touched.
    expect(await Promise.all(ids.map(due))).toEqual([
      T0 + 1_000,
      T0 + 5_000,
      T0 + 1_000,
      T0 + 1_000,
      T0 + 1_000,
    ]);
    expect(await due(other!)).toBe(T0);
    // One enqueued during the pause is due at its end too.
    clock.advance(100);
    const [late] = await finishedOperations(store, 1, 'https://down.example/cb');
    expect(await due(late!)).toBe(T0 + 1_000);
    expect(await claimAll(store, 'w1')).toEqual([other]);
    expect((await store.getOperation('default', late!))?.callback.next_attempt_at).toBe(
      new Date(T0 + 1_000).toISOString(),
    );
    // At the end of the pause they are due, in the order they were enqueued.
    clock.advance(900);
    expect(await claimAll(store, 'w1', 2)).toEqual([ids[0], ids[2]]);
  });

  it('makes parked first attempts due at once when an answer closes the circuit before its pause ends', async () => {
    const { clock, store } = t;
    const ids = await finishedOperations(store, 5, 'https://flap.example/cb');
    expect(await claimAll(store, 'w1', 3)).toEqual(ids.slice(0, 3));
    await store.settleCallbacks(
      'w1',
      [settlement(ids[0]!, 500, 'failed'), settlement(ids[1]!, 500, 'failed')],
      {
        circuit: POLICY,
      },
    );
    const due = async (id: string) => (await store.getCallback(id))?.next_attempt_at;
    expect(await due(ids[3]!)).toBe(T0 + 1_000);
    clock.advance(200);
    // The answer to an attempt sent before the circuit opened closes it.
    await store.settleCallbacks('w1', [settlement(ids[2]!, 200, 'answered')], { circuit: POLICY });
    expect(await store.getEndpoint('flap.example:443')).toMatchObject({ circuit_state: 'closed' });
    expect(await Promise.all(ids.map(due))).toEqual([T0 + 5_000, T0 + 5_000, null, T0 + 200, T0 + 200]);
    expect(await claimAll(store, 'w1')).toEqual([ids[3], ids[4]]);
  });

  it('closes a circuit on an answer, and writes nothing for a receiver that is closed already', async () => {
    const { store } = t;
    const ids = await finishedOperations(store, 2, 'https://mended.example/cb');
    await store.updateEndpoint('mended.example:443', {
      circuit_state: 'half_open',
      consecutive_failures: 7,
      open_until: null,
    });
    await claimAll(store, 'w1');
    await store.settleCallbacks('w1', [settlement(ids[0]!, 204, 'answered')], { circuit: POLICY });
    expect(await store.getEndpoint('mended.example:443')).toMatchObject({
      circuit_state: 'closed',
      consecutive_failures: 0,
      open_until: null,
    });
    const [fresh] = await finishedOperations(store, 1, 'https://fresh.example/cb');
    await claimAll(store, 'w1');
    await store.settleCallbacks('w1', [settlement(fresh!, 200, 'answered')], { circuit: POLICY });
    expect((await store.getEndpoint('fresh.example:443')).updated_at).toBeNull();
  });

  it('closes every receiver of a batch that only answered, each with its own attempt', async () => {
    const { store } = t;
    const [a1, a2] = await finishedOperations(store, 2, 'https://one.example/cb');
    const [b1] = await finishedOperations(store, 1, 'https://two.example/cb');
    await store.updateEndpoint('one.example:443', {
      circuit_state: 'half_open',
      consecutive_failures: 6,
      open_until: null,
    });
    await store.updateEndpoint('two.example:443', {
      circuit_state: 'closed',
      consecutive_failures: 1,
      open_until: null,
    });
    await claimAll(store, 'w1');
    const result = await store.settleCallbacks(
      'w1',
      [settlement(a1!, 200, 'answered'), settlement(b1!, 201, 'answered'), settlement(a2!, 202, 'answered')],
      { circuit: POLICY },
    );
    expect(result.settled.map((r) => !isStoreError(r) && r.state)).toEqual([
      'delivered',
      'delivered',
      'delivered',
    ]);
    for (const key of ['one.example:443', 'two.example:443']) {
      expect(await store.getEndpoint(key)).toMatchObject({
        circuit_state: 'closed',
        consecutive_failures: 0,
      });
    }
    expect((await store.listAttempts(b1!)).map((a) => [a.seq, a.status_code, a.worker_id])).toEqual([
      [1, 201, 'w1'],
    ]);
  });

  it('refuses a lone settlement whose lease was lost, writing nothing, and still claims', async () => {
    const { store } = t;
    const [mine, theirs] = await finishedOperations(store, 2, 'https://lone.example/cb');
    await store.updateEndpoint('lone.example:443', {
      circuit_state: 'half_open',
      consecutive_failures: 2,
      open_until: null,
    });
    expect(await claimAll(store, 'w1', 1)).toEqual([mine]);
    const result = await store.settleCallbacks('w2', [settlement(mine!, 200, 'answered')], {
      circuit: POLICY,
      claim: { limit: 5, leaseMs: LEASE },
    });
    expect(isStoreError(result.settled[0]) && result.settled[0].code).toBe('lease_lost');
    expect(result.claimed.map((c) => c.callback.id_gen)).toEqual([theirs]);
    expect(await store.listAttempts(mine!)).toEqual([]);
    // The refused answer said nothing about the receiver.
    expect(await store.getEndpoint('lone.example:443')).toMatchObject({ circuit_state: 'half_open' });
  });

  it('wakes workers on other clients for a retry that is due at once', async () => {
    const { backend, clock, store } = t;
    const [id] = await finishedOperations(store, 1, 'https://again.example/cb');
    await claimAll(store, 'w1');
    const listener = backend.open();
    const wakeUps = recordWakeUps(listener);
    await wakeUps.subscription.ready;
    const retry: Settlement = {
      ...settlement(id!, 503, 'answered'),
      next: { state: 'retrying', next_attempt_at: clock.now },
    };
    await store.settleCallbacks('w1', [retry], { circuit: POLICY });
    expect(await wakeUps.next((e) => e.kind === 'callback' && e.id_gen === id)).toEqual({
      kind: 'callback',
      id_gen: id,
    });
    wakeUps.subscription();
  });

  it('claims after settling, in one transaction: freed slots and new circuits count', async () => {
    const { store } = t;
    const busy = await finishedOperations(store, 4, 'https://busy.example/cb');
    const down = await finishedOperations(store, 3, 'https://down.example/cb');
    const capped = { limit: 10, leaseMs: LEASE, perEndpointLimit: 2 };
    const first = await store.settleCallbacks('w1', [], { circuit: POLICY, claim: capped });
    expect(first.claimed.map((c) => c.callback.id_gen).sort()).toEqual(
      [busy[0], busy[1], down[0], down[1]].sort(),
    );
    const second = await store.settleCallbacks(
      'w1',
      [
        settlement(busy[0]!, 200, 'answered'),
        settlement(down[0]!, 500, 'failed'),
        settlement(down[1]!, 500, 'failed'),
      ],
      { circuit: POLICY, claim: capped },
    );
    // busy had a slot freed; down's circuit opened in this very transaction.
    expect(second.claimed.map((c) => c.callback.id_gen)).toEqual([busy[2]]);
    expect(second.claimed[0]).toMatchObject({
      callback: { state: 'delivering', lease_owner: 'w1' },
      operation: { id_gen: busy[2], state: 'failed' },
    });
  });

  it('half-opens a circuit whose pause is over when it lets a callback through', async () => {
    const { clock, store } = t;
    const [waiting] = await finishedOperations(store, 1, 'https://paused.example/cb');
    await store.updateEndpoint('paused.example:443', {
      circuit_state: 'open',
      consecutive_failures: 3,
      open_until: T0 + 1_000,
    });
    expect(
      (await store.settleCallbacks('w1', [], { circuit: POLICY, claim: { limit: 5, leaseMs: LEASE } }))
        .claimed,
    ).toEqual([]);
    clock.advance(1_000);
    const probe = await store.settleCallbacks('w1', [], {
      circuit: POLICY,
      claim: { limit: 5, leaseMs: LEASE },
    });
    expect(probe.claimed.map((c) => c.callback.id_gen)).toEqual([waiting]);
    expect(await store.getEndpoint('paused.example:443')).toMatchObject({
      circuit_state: 'half_open',
      consecutive_failures: 3,
    });
    // The probe fails: open again, for twice as long.
    await store.settleCallbacks('w1', [settlement(waiting!, 503, 'failed')], { circuit: POLICY });
    expect(await store.getEndpoint('paused.example:443')).toMatchObject({
      circuit_state: 'open',
      consecutive_failures: 4,
      open_until: clock.now + 4_000,
    });
  });

  it('doubles the pause once when a round of several probes fails', async () => {
    const { clock, store } = t;
    const probes = await finishedOperations(store, 3, 'https://flaky.example/cb');
    await store.updateEndpoint('flaky.example:443', {
      circuit_state: 'open',
      consecutive_failures: 2,
      open_until: T0,
    });
    const claimed = await store.settleCallbacks('w1', [], {
      circuit: POLICY,
      claim: { limit: 5, leaseMs: LEASE },
    });
    expect(claimed.claimed.map((c) => c.callback.id_gen).sort()).toEqual([...probes].sort());
    await store.settleCallbacks(
      'w1',
      probes.map((id) => settlement(id, 503, 'failed')),
      { circuit: POLICY },
    );
    expect(await store.getEndpoint('flaky.example:443')).toMatchObject({
      circuit_state: 'open',
      consecutive_failures: 3,
      open_until: clock.now + 2_000,
    });
  });

  it('folds circuit outcomes with a pause that doubles per opening, up to its bound', () => {
    const closed: EndpointUpdate = { circuit_state: 'closed', consecutive_failures: 0, open_until: null };
    let state = closed;
    const pauses: (number | null)[] = [];
    for (let round = 0; round < 6; round++) {
      // A round of three failures: the first may open the circuit, the others change nothing.
      for (let i = 0; i < 3; i++) state = nextCircuit(state, 'failed', POLICY, 0);
      pauses.push(state.open_until);
      // Its pause over, the circuit is half-opened for the next round's probes.
      state = { ...state, circuit_state: 'half_open' };
    }
    expect(pauses).toEqual([1_000, 2_000, 4_000, 4_000, 4_000, 4_000]);
    expect(state.consecutive_failures).toBe(7);
    expect(nextCircuit(state, 'answered', POLICY, 0)).toEqual(closed);
  });
}
