/**
 * Store suite cases about wake-ups: in process on SQLite, LISTEN/NOTIFY between separate
 * connections on PostgreSQL. Registered by store-suite.test.ts.
 */
import { expect, it } from 'vitest';
import { newOperation, recordWakeUps, type SuiteContext } from './helpers.ts';

export function wakeUpCases(t: SuiteContext): void {
  it('wakes a listener on another client when work becomes due', async () => {
    const { backend, store } = t;
    const listener = backend.open();
    const wakeUps = recordWakeUps(listener);
    await wakeUps.subscription.ready;
    const op = await store.createOperation(newOperation());
    expect(await wakeUps.next((e) => e.kind === 'operation')).toEqual({
      kind: 'operation',
      id_gen: op.id_gen,
    });
    await store.finishOperation(op.id_gen, { state: 'failed', message: 'no' });
    expect(await wakeUps.next((e) => e.kind === 'callback')).toEqual({ kind: 'callback', id_gen: op.id_gen });
    wakeUps.subscription();
    const count = wakeUps.events.length;
    const late = recordWakeUps(listener);
    await late.subscription.ready;
    await store.createOperation(newOperation());
    await late.next((e) => e.kind === 'operation');
    expect(wakeUps.events.length).toBe(count);
  });

  it.runIf(t.kind.name === 'postgres')('listens again after its LISTEN connection drops', async () => {
    const { backend, store } = t;
    const problems: unknown[] = [];
    const listener = backend.open({ onBackgroundError: (e) => problems.push(e) });
    const wakeUps = recordWakeUps(listener);
    await wakeUps.subscription.ready;
    expect(await backend.dropListenerConnections!()).toBe(1);
    // Notifications sent while it was away are lost: the reconnect itself says "look now".
    await wakeUps.next((e) => e.kind === 'callback' && e.id_gen === null);
    const op = await store.createOperation(newOperation());
    await wakeUps.next((e) => e.id_gen === op.id_gen);
    expect(problems.length).toBeGreaterThan(0);
  });
}
