/**
 * Store suite cases about operations: migrations, the lifecycle, the resource shape, the
 * outbox write and listing. Registered by store-suite.test.ts for each database.
 */
import { expect, it } from 'vitest';
import { ALL_CLIENTS, type ClientScope, MIGRATIONS, type Store } from '../../src/store/index.ts';
import {
  attempt,
  expectStoreError,
  finishedOperations,
  LEASE,
  newOperation,
  RFC3339_MS,
  recordWakeUps,
  type SuiteContext,
  T0,
} from './helpers.ts';

export function operationCases(t: SuiteContext): void {
  it('names its database and says whether other processes share it (PostgreSQL only)', () => {
    expect(t.store.dialect).toBe(t.kind.name);
    expect(t.store.sharedByProcesses).toBe(t.kind.name === 'postgres');
  });

  it('keeps API keys by hash only, with client and role, revokes them and counts revoked ones', async () => {
    const { store } = t;
    expect(await store.countApiKeys()).toBe(0);
    const key = { hash: 'a'.repeat(64), prefix: 'mh_abcd', label: 'ci', created_at: T0 } as const;
    const added = await store.addApiKey({ ...key, client: 'acme', role: 'client', expires_at: T0 + 1000 });
    expect(added).toEqual({
      ...key,
      key_id: `key_${'a'.repeat(16)}`,
      client: 'acme',
      role: 'client',
      expires_at: T0 + 1000,
      last_used_at: null,
      revoked_at: null,
    });
    await store.addApiKey({ ...key, client: 'default', role: 'admin', hash: 'b'.repeat(64), label: null });
    expect(await store.countApiKeys()).toBe(2);
    expect(await store.findApiKey('a'.repeat(64))).toEqual(added);
    expect(await store.findApiKey('c'.repeat(64))).toBeUndefined();
    await expectStoreError(store.addApiKey({ ...key, client: 'acme', role: 'client' }), 'conflict');
    await expectStoreError(
      store.addApiKey({ ...key, hash: 'd'.repeat(64), client: 'no spaces', role: 'client' }),
      'invalid_argument',
    );
    await store.touchApiKeys([added.key_id], T0 + 5);
    const revoked = await store.revokeApiKey(added.key_id);
    expect(revoked).toMatchObject({ last_used_at: T0 + 5, revoked_at: expect.any(Number) });
    expect((await store.revokeApiKey(added.key_id)).revoked_at).toBe(revoked.revoked_at);
    await expectStoreError(store.revokeApiKey('key_unknown'), 'not_found');
    expect((await store.listApiKeys()).map((k) => k.client)).toEqual(['acme', 'default']);
    expect(await store.countApiKeys()).toBe(2);
  });

  it('shows each client its own operations only, and an admin all of them', async () => {
    const { store } = t;
    const a = await store.createOperation(newOperation({ client: 'a' }));
    const b = await store.createOperation(newOperation({ client: 'b' }));
    await store.finishOperation(a.id_gen, { state: 'failed', message: 'x' });
    expect((await store.getOperation('a', a.id_gen))?.client).toBe('a');
    expect(await store.getOperation('b', a.id_gen)).toBeUndefined();
    expect(await store.getOperationRecord('b', a.id_gen)).toBeUndefined();
    expect((await store.getOperation(ALL_CLIENTS, a.id_gen))?.client).toBe('a');
    const list = async (scope: ClientScope) =>
      (await store.listOperations(scope, { limit: 10 })).map((o) => o.id_gen);
    expect(await list('a')).toEqual([a.id_gen]);
    expect(await list('b')).toEqual([b.id_gen]);
    expect(await list(ALL_CLIENTS)).toEqual([b.id_gen, a.id_gen]);
    await expectStoreError(store.redeliver('b', a.id_gen), 'not_found');
    expect((await store.redeliver('a', a.id_gen)).state).toBe('pending');
    await expectStoreError(store.listOperations('' as string, { limit: 1 }), 'invalid_argument');
  });

  it('takes an idempotency key once, replays its answer, and frees a stale one', async () => {
    const { store } = t;
    const keep = { keepMs: 86_400_000, abandonMs: 60_000 };
    expect(await store.claimIdempotencyKey('a', 'k', 'h1', keep)).toEqual({ state: 'claimed' });
    expect(await store.claimIdempotencyKey('a', 'k', 'h1', keep)).toEqual({ state: 'in_progress' });
    expect(await store.claimIdempotencyKey('a', 'k', 'h2', keep)).toEqual({ state: 'reused' });
    // Scoped to the client: another's same key is its own.
    expect(await store.claimIdempotencyKey('b', 'k', 'h2', keep)).toEqual({ state: 'claimed' });
    await store.completeIdempotencyKey('a', 'k', 202, '{"id_gen":"x"}');
    expect(await store.claimIdempotencyKey('a', 'k', 'h1', keep)).toEqual({
      state: 'done',
      status: 202,
      body: '{"id_gen":"x"}',
    });
    await store.releaseIdempotencyKey('b', 'k');
    expect(await store.claimIdempotencyKey('b', 'k', 'h3', keep)).toEqual({ state: 'claimed' });
    expect(await store.claimIdempotencyKey('b', 'k', 'h3', { ...keep, abandonMs: 0 })).toEqual({
      state: 'claimed',
    });
  });

  it('keeps a client secret once, and rotates it keeping the previous one', async () => {
    const { store } = t;
    expect(await store.getClientSecret('a')).toBeUndefined();
    await expectStoreError(store.rotateClientSecret('a', 's2', T0), 'not_found');
    expect((await store.addClientSecret('a', 's1')).secret).toBe('s1');
    expect((await store.addClientSecret('a', 'other')).secret).toBe('s1');
    const rotated = await store.rotateClientSecret('a', 's2', T0 + 10);
    expect(rotated).toMatchObject({
      client: 'a',
      secret: 's2',
      previous_secret: 's1',
      previous_until: T0 + 10,
    });
    expect(await store.getClientSecret('a')).toEqual(rotated);
  });

  it('migrates idempotently, also from several clients at once', async () => {
    const { backend, store } = t;
    await store.migrate();
    const other = backend.open();
    await Promise.all([other.migrate(), store.migrate()]);
    expect(await backend.countRows('store_migrations')).toBe(Object.keys(MIGRATIONS).length);
    await other.createOperation(newOperation());
    expect(await backend.countRows('operations')).toBe(1);
  });

  it('runs an operation through its lifecycle', async () => {
    const { clock, store } = t;
    const input = newOperation({ kind: 'video', family: 'A', fail_with: null, status_text: 'done' });
    const created = await store.createOperation(input);
    expect(created).toMatchObject({
      state: 'queued',
      created_at: T0,
      runs: 0,
      endpoint_key: 'hooks.example.com:443',
    });
    await expectStoreError(store.createOperation(input), 'conflict');
    expect((await store.getOperation('default', input.id_gen))?.callback).toEqual({
      state: 'pending',
      status: null,
      next_attempt_at: null,
      attempts: [],
    });

    clock.advance(10);
    const running = await store.claimOperation('gen-1', LEASE);
    expect(running).toMatchObject({ id_gen: input.id_gen, state: 'running', lease_owner: 'gen-1', runs: 1 });
    expect(running?.lease_expires_at).toBe(T0 + 10 + LEASE);
    expect(await store.claimOperation('gen-2', LEASE)).toBeUndefined();
    expect(await store.renewOperationLease(input.id_gen, 'gen-1', LEASE * 2)).toBe(true);

    clock.advance(100);
    const result = {
      key: `blobs/${input.id_gen}.mp4`,
      media_type: 'video/mp4' as const,
      bytes: 3_000_000_000,
    };
    const { operation, changed } = await store.finishOperation(input.id_gen, { state: 'succeeded', result });
    expect(changed).toBe(true);
    expect(operation).toMatchObject({ state: 'succeeded', finished_at: T0 + 110, result, lease_owner: null });
    expect(await store.getOperationRecord('default', input.id_gen)).toEqual(operation);
    expect(await store.getCallback(input.id_gen)).toMatchObject({
      state: 'pending',
      next_attempt_at: T0 + 110,
      attempt_count: 0,
      endpoint_key: 'hooks.example.com:443',
    });
    expect(await store.getOperation('default', 'no-such-id')).toBeUndefined();
    await expectStoreError(
      store.finishOperation('no-such-id', { state: 'failed', message: 'x' }),
      'not_found',
    );
  });

  it('shows the operation resource exactly as docs/service.md does', async () => {
    const { store } = t;
    const [id] = await finishedOperations(store, 1, 'http://127.0.0.1:9000/hook');
    const [claimed] = await store.claimCallbacks('w1', { limit: 1, leaseMs: LEASE });
    expect(claimed?.operation.error_message).toBe('failure 0');
    const answer = '{"error":{"code":"missing_part","message":"no time_gen"}}';
    const sent = { 'content-type': 'multipart/form-data; boundary=x', 'webhook-id': id! };
    const answered = { 'content-type': 'application/json', 'x-note': '<b>\u0000</b>' };
    await store.recordAttempt(
      id!,
      'w1',
      { ...attempt(T0 + 1, 500), response_head: answer, request_headers: sent, response_headers: answered },
      {
        state: 'retrying',
        next_attempt_at: T0 + 5000,
      },
    );

    const resource = await store.getOperation('default', id!);
    expect(Object.keys(resource!).sort()).toEqual(
      [
        'callback',
        'client',
        'created_at',
        'error_message',
        'family',
        'finished_at',
        'id_gen',
        'kind',
        'state',
        'webhook_url',
      ].sort(),
    );
    expect(resource).toEqual({
      id_gen: id,
      client: 'default',
      kind: 'image',
      family: 'A',
      state: 'failed',
      webhook_url: 'http://127.0.0.1:9000/hook',
      created_at: '2025-01-01T00:00:00.000Z',
      finished_at: '2025-01-01T00:00:00.000Z',
      error_message: 'failure 0',
      callback: {
        state: 'retrying',
        status: 'error',
        next_attempt_at: '2025-01-01T00:00:05.000Z',
        attempts: [
          {
            at: '2025-01-01T00:00:00.001Z',
            duration_ms: 12,
            status_code: 500,
            error: null,
            response_head: answer,
            request_headers: sent,
            // Kept as both databases can keep text: NUL as U+FFFD.
            response_headers: { ...answered, 'x-note': '<b>\uFFFD</b>' },
          },
        ],
      },
    });
    expect(JSON.parse(JSON.stringify(resource))).toEqual(resource);
    expect(resource!.created_at).toMatch(RFC3339_MS);
  });

  it('shows the next attempt at the end of the pause while the receiver’s circuit is open', async () => {
    const { store } = t;
    const [id] = await finishedOperations(store, 1, 'http://127.0.0.1:9000/hook');
    await store.claimCallbacks('w1', { limit: 1, leaseMs: LEASE });
    await store.recordAttempt(id!, 'w1', attempt(T0 + 1, 503), {
      state: 'retrying',
      next_attempt_at: T0 + 5_000,
    });
    const nextAttempt = async () => (await store.getOperation('default', id!))!.callback.next_attempt_at;
    expect(await nextAttempt()).toBe(new Date(T0 + 5_000).toISOString());
    await store.updateEndpoint('127.0.0.1:9000', {
      circuit_state: 'open',
      consecutive_failures: 5,
      open_until: T0 + 60_000,
    });
    expect(await nextAttempt()).toBe(new Date(T0 + 60_000).toISOString());
    await store.updateEndpoint('127.0.0.1:9000', {
      circuit_state: 'closed',
      consecutive_failures: 0,
      open_until: null,
    });
    expect(await nextAttempt()).toBe(new Date(T0 + 5_000).toISOString());
  });

  it('finishes once: a second finish changes nothing', async () => {
    const { backend, clock, store } = t;
    const op = await store.createOperation(newOperation());
    const first = await store.finishOperation(op.id_gen, { state: 'failed', message: 'boom' });
    clock.advance(1000);
    const again = await store.finishOperation(op.id_gen, {
      state: 'succeeded',
      result: { key: 'k', media_type: 'image/jpeg', bytes: 1 },
    });
    expect(again).toEqual({ operation: first.operation, changed: false });
    expect(await backend.countRows('callbacks')).toBe(1);
    expect((await store.getCallback(op.id_gen))?.next_attempt_at).toBe(T0);
  });

  it('never leaves a finished operation without its callback (outbox atomicity)', async () => {
    const { backend, store } = t;
    const op = await store.createOperation(newOperation());
    await store.claimOperation('gen-1', LEASE);
    const wakeUps = recordWakeUps(store);
    await wakeUps.subscription.ready;
    const restore = await backend.breakCallbackInserts();
    await expect(store.finishOperation(op.id_gen, { state: 'failed', message: 'boom' })).rejects.toThrow(
      /injected failure/,
    );
    expect(await store.getOperationRecord('default', op.id_gen)).toMatchObject({
      state: 'running',
      finished_at: null,
    });
    expect(await store.getCallback(op.id_gen)).toBeUndefined();
    await restore();

    const { changed } = await store.finishOperation(op.id_gen, { state: 'failed', message: 'boom' });
    expect(changed).toBe(true);
    expect(await store.getCallback(op.id_gen)).toMatchObject({ state: 'pending' });
    // The rolled-back finish announced nothing; the committed one did.
    await wakeUps.next((e) => e.kind === 'callback' && e.id_gen === op.id_gen);
    expect(wakeUps.events.filter((e) => e.kind === 'callback')).toHaveLength(1);
  });

  it('takes over an operation whose worker let its lease lapse', async () => {
    const { clock, store } = t;
    const op = await store.createOperation(newOperation());
    await store.claimOperation('gen-1', LEASE);
    clock.advance(LEASE - 1);
    expect(await store.claimOperation('gen-2', LEASE)).toBeUndefined();
    clock.advance(1);
    expect(await store.claimOperation('gen-2', LEASE)).toMatchObject({
      id_gen: op.id_gen,
      lease_owner: 'gen-2',
      runs: 2,
    });
    expect(await store.renewOperationLease(op.id_gen, 'gen-1', LEASE)).toBe(false);
  });

  it('takes the oldest of the queued operations and those whose lease lapsed, behind finished ones', async () => {
    const { clock, store } = t;
    const done = await store.createOperation(newOperation());
    await store.claimOperation('gen-1', LEASE);
    await store.finishOperation(done.id_gen, { state: 'failed', message: 'boom' });
    const lapsed = await store.createOperation(newOperation());
    const queued = await store.createOperation(newOperation());
    expect(await store.claimOperation('gen-1', LEASE)).toMatchObject({ id_gen: lapsed.id_gen });
    clock.advance(LEASE);
    const later = await store.createOperation(newOperation());
    const order = [];
    for (let i = 0; i < 4; i++) order.push((await store.claimOperation('gen-2', LEASE))?.id_gen);
    expect(order).toEqual([lapsed.id_gen, queued.id_gen, later.id_gen, undefined]);
  });

  it('lists operations by state, family, receiver and callback state, newest first', async () => {
    const { store } = t;
    const a = await store.createOperation(
      newOperation({ family: 'A', webhook_url: 'https://one.example/x' }),
    );
    const b = await store.createOperation(
      newOperation({ family: 'B', webhook_url: 'https://two.example:8443/y' }),
    );
    const c = await store.createOperation(
      newOperation({ family: 'B', webhook_url: 'https://one.example:443/z' }),
    );
    await store.finishOperation(b.id_gen, { state: 'failed', message: 'x' });
    const ids = async (options: Parameters<Store['listOperations']>[1]) =>
      (await store.listOperations('default', options)).map((o) => o.id_gen);
    expect(await ids({ limit: 10 })).toEqual([c.id_gen, b.id_gen, a.id_gen]);
    expect(await ids({ limit: 10, family: 'B' })).toEqual([c.id_gen, b.id_gen]);
    expect(await ids({ limit: 10, state: 'queued' })).toEqual([c.id_gen, a.id_gen]);
    expect(await ids({ limit: 10, endpoint: 'one.example:443' })).toEqual([c.id_gen, a.id_gen]);
    expect(await ids({ limit: 10, callbackState: 'pending' })).toEqual([b.id_gen]);
    expect(await ids({ limit: 2 })).toEqual([c.id_gen, b.id_gen]);
    expect(await ids({ limit: 2, before: b.id_gen })).toEqual([a.id_gen]);
    await expectStoreError(store.listOperations('default', { limit: 0 }), 'invalid_argument');
  });
}
