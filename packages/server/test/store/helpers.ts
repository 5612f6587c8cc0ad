import { expect } from 'vitest';
import { uuidv7Generator } from '../../../mediahook/src/protocol/uuidv7.ts';
import type { AttemptInput, NewOperation, Store, StoreErrorCode, WorkEvent } from '../../src/store/index.ts';
import { isStoreError } from '../../src/store/index.ts';
import type { Backend, BackendKind } from './backends.ts';

/** 2025-01-01T00:00:00.000Z: tests run on a clock they move by hand. */
export const T0 = Date.UTC(2025, 0, 1);

export interface ManualClock {
  now: number;
  readonly read: () => number;
  advance(ms: number): void;
}

export function manualClock(start = T0): ManualClock {
  const clock = {
    now: start,
    read: () => clock.now,
    advance(ms: number) {
      clock.now += ms;
    },
  };
  return clock;
}

const nextId = uuidv7Generator();

export function newOperation(overrides: Partial<NewOperation> = {}): NewOperation {
  return {
    id_gen: nextId(),
    client: 'default',
    kind: 'image',
    family: 'A',
    webhook_url: 'https://hooks.example.com/cb',
    prompt: 'a red fox',
    ...overrides,
  };
}

/** Operations created and finished (failed, so no file is involved): their callbacks are due now. */
export async function finishedOperations(store: Store, count: number, url?: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const op = await store.createOperation(newOperation(url === undefined ? {} : { webhook_url: url }));
    await store.finishOperation(op.id_gen, { state: 'failed', message: `failure ${i}` });
    ids.push(op.id_gen);
  }
  return ids;
}

export async function expectStoreError(promise: Promise<unknown>, code: StoreErrorCode): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isStoreError(error), `expected a StoreError ${code}, got ${String(error)}`).toBe(true);
  expect((error as { code: string }).code).toBe(code);
}

/** Wake-ups heard by one subscription, to await the one a test expects. */
export function recordWakeUps(store: Store) {
  const events: WorkEvent[] = [];
  const waiters: { match: (e: WorkEvent) => boolean; resolve: (e: WorkEvent) => void }[] = [];
  const subscription = store.onWork((event) => {
    events.push(event);
    for (const waiter of [...waiters]) {
      if (waiter.match(event)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(event);
      }
    }
  });
  return {
    events,
    subscription,
    next(match: (e: WorkEvent) => boolean, timeoutMs = 5000): Promise<WorkEvent> {
      const seen = events.find(match);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no such wake-up arrived')), timeoutMs);
        waiters.push({
          match,
          resolve: (e) => {
            clearTimeout(timer);
            resolve(e);
          },
        });
      });
    },
  };
}

export const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** What every case of the store suite runs against; filled in before each test. */
export interface SuiteContext {
  kind: BackendKind;
  backend: Backend;
  store: Store;
  clock: ManualClock;
}

/** The lease the cases claim with. */
export const LEASE = 30_000;

/** A delivery attempt as a sender would report it. */
export function attempt(at: number, status_code: number | null, error: string | null = null): AttemptInput {
  return { at, duration_ms: 12, status_code, error };
}
