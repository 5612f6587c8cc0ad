/**
 * What the delivery tests share: the two store backends (from the store suite), a compressed
 * retry schedule, operations finished into the outbox (with a real result file or as errors),
 * workers that are stopped after each test, and polling for a condition.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import {
  CallbackSender,
  type CallbackSenderOptions,
  type CircuitPolicy,
  DeliveryWorker,
  type DeliveryWorkerOptions,
  blobKeyOf,
  type BlobStore,
  DirectoryBlobStore,
  type RetryPolicy,
} from '../../src/delivery/index.ts';
import { uuidv7Generator } from '../../../mediahook/src/protocol/uuidv7.ts';
import { isStoreError, type Store } from '../../src/store/index.ts';
import {
  type Backend,
  type BackendKind,
  POSTGRES_URL,
  postgresBackend,
  probePostgres,
  sqliteBackend,
} from '../store/backends.ts';

/**
 * The backends a delivery suite loops over. With CI=true an unreachable PostgreSQL registers a
 * failing test; elsewhere its half is skipped with a message on the console.
 */
export async function deliveryBackends(suite: string): Promise<BackendKind[]> {
  const problem = await probePostgres();
  if (problem === undefined) return [sqliteBackend, postgresBackend];
  if (process.env.CI === 'true') {
    describe(`PostgreSQL for ${suite}`, () => {
      it(`is reachable at ${POSTGRES_URL}`, () => {
        throw new Error(`PostgreSQL is required when CI=true: ${problem}`);
      });
    });
  } else {
    console.warn(`${suite}: SKIPPING PostgreSQL (${POSTGRES_URL}): ${problem}`);
    describe.skip(`${suite} on postgres (unreachable)`, () => {
      it('needs PostgreSQL', () => {});
    });
  }
  return [sqliteBackend];
}

/** Retries after 50, 100 and 150 ms, no jitter, any Retry-After up to 2 s honoured as is. */
export const FAST_RETRY: RetryPolicy = {
  schedule: [50, 100, 150],
  jitter: 0,
  retryAfterMinMs: 0,
  retryAfterMaxMs: 2_000,
};

/** A circuit that would never open within a test, unless a test asks for one. */
const LAZY_CIRCUIT: CircuitPolicy = { failureThreshold: 1_000, openMs: 1_000, maxOpenMs: 1_000 };

/** Bytes the real receiver sniffs as JPEG. */
export function jpegBytes(size = 2048): Buffer {
  const bytes = randomBytes(size);
  bytes.set([0xff, 0xd8, 0xff, 0xe0], 0);
  bytes.set([0xff, 0xd9], size - 2);
  return bytes;
}

const nextId = uuidv7Generator();

/** One test's store, result directory and everything to close afterwards. */
export class DeliveryFixture {
  readonly backend: Backend;
  readonly store: Store;
  readonly blobs: BlobStore;
  /** Errors the workers reported through `onError`. */
  readonly workerErrors: unknown[] = [];
  readonly #dir: string;
  readonly #cleanups: (() => Promise<void>)[] = [];

  private constructor(backend: Backend, store: Store, dir: string, blobs: BlobStore | undefined) {
    this.backend = backend;
    this.store = store;
    this.#dir = dir;
    this.blobs = blobs ?? new DirectoryBlobStore(join(dir, 'results'));
  }

  /** A fixture on a fresh database of `kind`, keeping results in `blobs` (a directory by default). */
  static async create(kind: BackendKind, blobs?: BlobStore): Promise<DeliveryFixture> {
    const backend = await kind.create();
    const store = backend.open();
    await store.migrate();
    return new DeliveryFixture(backend, store, mkdtempSync(join(tmpdir(), 'mediahook-delivery-')), blobs);
  }

  /** Runs `cleanup` at dispose, before the store closes (last registered runs first). */
  defer(cleanup: () => Promise<void>): void {
    this.#cleanups.push(cleanup);
  }

  /**
   * Creates an operation whose webhook is `url(id_gen)` and finishes it: with a JPEG result
   * (`file`, the default) or as a failure. Its callback is then due now.
   */
  async finished(
    url: (id: string) => string,
    outcome: 'file' | 'error' = 'file',
    bytes = jpegBytes(),
  ): Promise<string> {
    const id = nextId();
    await this.store.createOperation({
      id_gen: id,
      client: 'default',
      kind: 'image',
      family: 'A',
      webhook_url: url(id),
      prompt: 'a lighthouse',
    });
    if (outcome === 'error') {
      await this.store.finishOperation(id, { state: 'failed', message: `generation ${id} failed` });
    } else {
      const key = blobKeyOf(id, 'image/jpeg');
      await this.blobs.put(key, [bytes]);
      await this.store.finishOperation(id, {
        state: 'succeeded',
        result: { key, media_type: 'image/jpeg', bytes: bytes.length },
      });
    }
    return id;
  }

  async finishedMany(count: number, url: (id: string) => string, outcome: 'file' | 'error' = 'error') {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 1) ids.push(await this.finished(url, outcome));
    return ids;
  }

  /**
   * A started worker on this store with the fast schedule. Its sender allows loopback unless
   * `senderOptions` are given, which then replace that default entirely.
   */
  async worker(
    options: Partial<DeliveryWorkerOptions> & { senderOptions?: CallbackSenderOptions } = {},
  ): Promise<DeliveryWorker> {
    const { senderOptions, ...rest } = options;
    const sender = new CallbackSender(senderOptions ?? { ssrf: { allowPrivate: true } });
    const worker = new DeliveryWorker({
      store: this.store,
      blobs: this.blobs,
      sender,
      retry: FAST_RETRY,
      circuit: LAZY_CIRCUIT,
      leaseMs: 60_000,
      onError: (error) => this.workerErrors.push(error),
      ...rest,
    });
    // Stopped with no grace, which ends its open requests, so closing the sender cannot hang.
    this.defer(async () => {
      await worker.stop(0);
      await sender.close();
    });
    await worker.start();
    return worker;
  }

  /** Worker errors other than a lost lease (which a test may cause on purpose). */
  unexpectedErrors(): unknown[] {
    return this.workerErrors.filter((e) => !(isStoreError(e) && e.code === 'lease_lost'));
  }

  async state(id: string): Promise<string | undefined> {
    return (await this.store.getCallback(id))?.state;
  }

  async dispose(): Promise<void> {
    try {
      for (const cleanup of this.#cleanups.splice(0).reverse()) await cleanup();
    } finally {
      await this.backend.dispose();
      rmSync(this.#dir, { recursive: true, force: true });
    }
  }
}

/** Polls `check` until it returns true; fails with `what` after `timeoutMs`. */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Waits until every id's callback is in `state`. */
export async function waitForStates(
  fixture: DeliveryFixture,
  ids: readonly string[],
  state: string,
  timeoutMs = 10_000,
): Promise<void> {
  await waitFor(
    `${ids.length} callbacks ${state}`,
    async () => {
      for (const id of ids) if ((await fixture.state(id)) !== state) return false;
      return true;
    },
    timeoutMs,
  );
}

/** A store that counts the calls made to it and can hold `nextDueAt` answers back. */
interface InstrumentedStore {
  store: Store;
  calls: Map<string, number>;
  /**
   * While set, `nextDueAt` asks the real store, then waits for this promise before answering:
   * its (by then stale) answer arrives after whatever the test did meanwhile.
   */
  holdNextDueAt: Promise<void> | null;
  /** Resolves when `nextDueAt` is next called. */
  nextDueAtCalled(): Promise<void>;
}

export function instrument(store: Store): InstrumentedStore {
  const calls = new Map<string, number>();
  let called: (() => void) | null = null;
  const result: InstrumentedStore = {
    calls,
    holdNextDueAt: null,
    nextDueAtCalled: () => new Promise<void>((resolve) => (called = resolve)),
    store: new Proxy(store, {
      get(target, key) {
        const value: unknown = Reflect.get(target, key);
        if (typeof value !== 'function') return value;
        const name = String(key);
        return (...args: unknown[]) => {
          calls.set(name, (calls.get(name) ?? 0) + 1);
          const answer: unknown = value.apply(target, args);
          if (name !== 'nextDueAt') return answer;
          const hold = result.holdNextDueAt;
          called?.();
          called = null;
          return hold === null
            ? answer
            : (answer as Promise<unknown>).then(async (due) => hold.then(() => due));
        };
      },
    }),
  };
  return result;
}
