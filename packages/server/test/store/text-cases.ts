/**
 * Store suite cases about text PostgreSQL's `text` cannot hold (U+0000): both databases refuse
 * it alike where it comes from a caller, and keep a receiver's answer, which may be any bytes.
 * Registered by store-suite.test.ts.
 */
import { expect, it } from 'vitest';
import {
  attempt,
  expectStoreError,
  finishedOperations,
  LEASE,
  newOperation,
  type SuiteContext,
  T0,
} from './helpers.ts';

const NUL = 'a\u0000b';

export function textCases(t: SuiteContext): void {
  it('refuses U+0000 in what an operation is created or finished with, on both databases', async () => {
    const { store } = t;
    for (const field of ['webhook_url', 'prompt', 'fail_with', 'status_text'] as const) {
      const text = field === 'webhook_url' ? `https://hooks.example.com/${NUL}` : NUL;
      await expectStoreError(store.createOperation(newOperation({ [field]: text })), 'invalid_argument');
    }
    await expectStoreError(store.createOperation(newOperation({ id_gen: NUL })), 'invalid_argument');
    expect((await store.queueDepth()).operations.queued).toBe(0);
    const op = await store.createOperation(newOperation());
    await expectStoreError(
      store.finishOperation(op.id_gen, { state: 'failed', message: NUL }),
      'invalid_argument',
    );
    expect((await store.getOperation('default', op.id_gen))?.state).toBe('queued');
  });

  it('answers a lookup by text holding U+0000 with invalid_argument, not a database error', async () => {
    const { store } = t;
    await finishedOperations(store, 1);
    await expectStoreError(store.getOperation('default', NUL), 'invalid_argument');
    await expectStoreError(store.getOperationRecord('default', NUL), 'invalid_argument');
    await expectStoreError(store.getCallback(NUL), 'invalid_argument');
    await expectStoreError(store.listAttempts(NUL), 'invalid_argument');
    await expectStoreError(store.redeliver('default', NUL), 'invalid_argument');
    await expectStoreError(store.getEndpoint(NUL), 'invalid_argument');
    await expectStoreError(store.listOperations('default', { limit: 5, before: NUL }), 'invalid_argument');
    await expectStoreError(store.listOperations('default', { limit: 5, endpoint: NUL }), 'invalid_argument');
  });

  it('records an answer whose bytes hold NUL, each NUL kept as U+FFFD', async () => {
    const { store } = t;
    const ids = await finishedOperations(store, 2);
    await store.claimCallbacks('w1', { limit: 2, leaseMs: LEASE });
    const answer = { ...attempt(T0, 200), response_head: 'ok\u0000\u0000!' };
    await store.recordAttempt(ids[0]!, 'w1', answer, { state: 'delivered' });
    // The settling round trip a delivery worker makes, with a failure so its circuit is read too.
    const failed = { ...attempt(T0, 500, 'bad\u0000answer'), response_head: '\u0000' };
    await store.settleCallbacks(
      'w1',
      [
        {
          id_gen: ids[1]!,
          attempt: failed,
          next: { state: 'retrying', next_attempt_at: T0 + 5_000 },
          circuit: 'failed',
        },
      ],
      { circuit: { failureThreshold: 5, openMs: 1_000, maxOpenMs: 4_000 } },
    );
    const [first] = await store.listAttempts(ids[0]!);
    expect(first).toMatchObject({ status_code: 200, response_head: 'ok\uFFFD\uFFFD!' });
    expect((await store.getOperation('default', ids[0]!))?.callback.state).toBe('delivered');
    const [second] = await store.listAttempts(ids[1]!);
    expect(second).toMatchObject({ status_code: 500, error: 'bad\uFFFDanswer', response_head: '\uFFFD' });
    expect((await store.getCallback(ids[1]!))?.last_error).toBe('bad\uFFFDanswer');
  });
}
