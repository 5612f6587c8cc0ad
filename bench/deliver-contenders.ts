/**
 * The senders of the deliver suite: ours (a DeliveryWorker draining the durable outbox, on
 * SQLite or PostgreSQL), a bare fetch + FormData loop (nothing durable), and a BullMQ queue
 * whose worker posts with fetch + FormData. All send the same 64 KiB JPEG with the same three
 * text fields to the same receiver, with the same number of requests in flight, and all are
 * driven through one interface: enqueue callback i, learn when the n-th 2xx came.
 */
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Queue, Worker } from 'bullmq';
import { Agent, FormData, fetch } from 'undici';
import { CallbackSender, DeliveryWorker } from '../packages/server/src/delivery/index.ts';
import { uuidv7Generator } from '../packages/mediahook/src/protocol/uuidv7.ts';
import type { Store } from '../packages/server/src/store/index.ts';
import { type Backend, inLanes, type Outbox, openOutbox } from './deliver-outbox.ts';

const REDIS = { host: '127.0.0.1', port: 6379 } as const;

export const CONTENDERS = ['ours (SQLite)', 'ours (PostgreSQL)', 'fetch+FormData', 'BullMQ'] as const;
export type Contender = (typeof CONTENDERS)[number];

/** What every run shares. */
export interface Env {
  origin: string;
  jpeg: Buffer;
  /** Requests in flight at once, for every contender. */
  concurrency: number;
}

/** One contender set up for `n` callbacks. */
interface Sender {
  /** The id of callback i; the receiver sees it as the path `/cb/<id>`. */
  ids: string[];
  /** Enqueues callback i: ours finishes its operation, BullMQ adds a job, fetch posts it. */
  enqueue(i: number): Promise<void>;
  /** How many enqueues a throughput run keeps going at once. */
  lanes: number;
  /** `performance.now()` of the n-th 2xx; rejects on any other outcome. */
  done: Promise<number>;
  close(): Promise<void>;
}

const nextId = uuidv7Generator();

/** Counts 2xx answers up to `n`; any failure fails the run, since a broken send must not count. */
class Tally {
  readonly done: Promise<number>;
  #count = 0;
  #resolve!: (at: number) => void;
  #reject!: (error: Error) => void;

  constructor(readonly n: number) {
    this.done = new Promise<number>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // Awaited only once the enqueues are done; a failure before that is not unhandled.
    this.done.catch(() => {});
  }

  ok(): void {
    if (++this.#count === this.n) this.#resolve(performance.now());
  }

  fail(error: Error): void {
    this.#reject(error);
  }
}

/** Concurrent producers of the durable contenders (ours: finishOperation; BullMQ: Queue#add). */
const PRODUCERS = 4;

export function openSender(contender: Contender, n: number, env: Env): Promise<Sender> {
  switch (contender) {
    case 'ours (SQLite)':
      return ours('sqlite', n, env);
    case 'ours (PostgreSQL)':
      return ours('postgres', n, env);
    case 'fetch+FormData':
      return fetchLoop(n, env);
    case 'BullMQ':
      return bullmq(n, env);
  }
}

/**
 * A DeliveryWorker on `outbox` as the service runs one, except that loopback is allowed and
 * the per-receiver cap equals the concurrency: with the one receiver here, the default cap (4)
 * would hold ours to 4 requests in flight while the peers have 16.
 */
export function ourWorker(
  outbox: Outbox,
  concurrency: number,
  tally: { ok(): void; fail(error: Error): void },
): { worker: DeliveryWorker; sender: CallbackSender } {
  const sender = new CallbackSender({ ssrf: { allowPrivate: true } });
  const worker = new DeliveryWorker({
    store: outbox.store,
    blobs: outbox.blobs,
    sender,
    concurrency,
    perEndpointLimit: concurrency,
    onAttempt: ({ id_gen, attempt }) => {
      if (attempt.verdict === 'delivered') tally.ok();
      else tally.fail(new Error(`ours: ${id_gen}: ${attempt.error ?? `HTTP ${attempt.status_code}`}`));
    },
    onError: (error) => tally.fail(error instanceof Error ? error : new Error(String(error))),
  });
  return { worker, sender };
}

/** Creates `n` operations (untimed: that is the API's work, before any generation). */
async function createOperations(store: Store, n: number, origin: string): Promise<string[]> {
  const ids = Array.from({ length: n }, () => nextId());
  // A store shared by processes takes writes on several connections at once; SQLite has one writer.
  await inLanes(n, store.sharedByProcesses ? 8 : 1, async (i) => {
    await store.createOperation({
      id_gen: ids[i]!,
      client: 'default',
      kind: 'image',
      family: 'A',
      webhook_url: `${origin}/cb/${ids[i]}`,
      prompt: 'bench',
    });
  });
  return ids;
}

/** Ours: `n` operations ready, a started worker; enqueue finishes one (the outbox write). */
async function ours(backend: Backend, n: number, env: Env): Promise<Sender> {
  const outbox = await openOutbox(backend, env.jpeg);
  try {
    const ids = await createOperations(outbox.store, n, env.origin);
    const tally = new Tally(n);
    const { worker, sender } = ourWorker(outbox, env.concurrency, tally);
    await worker.start();
    const result = { key: outbox.resultKey, media_type: 'image/jpeg' as const, bytes: env.jpeg.length };
    return {
      ids,
      lanes: PRODUCERS,
      done: tally.done,
      async enqueue(i) {
        await outbox.store.finishOperation(ids[i]!, { state: 'succeeded', result });
      },
      async close() {
        try {
          await worker.stop(0);
          await sender.close();
        } finally {
          await outbox.dispose();
        }
      },
    };
  } catch (error) {
    await outbox.dispose();
    throw error;
  }
}

/** One callback as a form: the three text fields and the JPEG as a Blob; the answer read to the end. */
async function postForm(dispatcher: Agent, origin: string, idGen: string, file: Blob): Promise<void> {
  const form = new FormData();
  form.append('status', 'success');
  form.append('id_gen', idGen);
  form.append('time_gen', new Date().toISOString());
  form.append('result_pv', file, `${idGen}.jpg`);
  const response = await fetch(`${origin}/cb/${idGen}`, { method: 'POST', body: form, dispatcher });
  await response.arrayBuffer(); // so that the connection goes back to the pool
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
}

/** Not durable: each enqueue is the POST itself, `concurrency` at once; a crash loses them all. */
async function fetchLoop(n: number, env: Env): Promise<Sender> {
  const dispatcher = new Agent({ connections: env.concurrency });
  const file = new Blob([env.jpeg], { type: 'image/jpeg' });
  const ids = Array.from({ length: n }, () => nextId());
  const tally = new Tally(n);
  return {
    ids,
    lanes: env.concurrency,
    done: tally.done,
    async enqueue(i) {
      try {
        await postForm(dispatcher, env.origin, ids[i]!, file);
        tally.ok();
      } catch (error) {
        tally.fail(error as Error);
        throw error;
      }
    },
    close: () => dispatcher.close(),
  };
}

/**
 * BullMQ: jobs added to a queue of their own, a Worker with the same concurrency posting each
 * with fetch + FormData. Retries are set as a webhook sender would set them (they cost nothing
 * while every send succeeds); completed jobs are kept, as the outbox keeps its rows. The queue
 * is obliterated afterwards.
 */
async function bullmq(n: number, env: Env): Promise<Sender> {
  const name = `mediahook-bench-${process.pid}-${randomBytes(4).toString('hex')}`;
  const connection = { ...REDIS, maxRetriesPerRequest: null };
  const dispatcher = new Agent({ connections: env.concurrency });
  const file = new Blob([env.jpeg], { type: 'image/jpeg' });
  const ids = Array.from({ length: n }, () => nextId());
  const tally = new Tally(n);
  const queue = new Queue(name, { connection });
  const worker = new Worker<{ id_gen: string }>(
    name,
    async (job) => {
      await postForm(dispatcher, env.origin, job.data.id_gen, file);
      tally.ok();
    },
    { connection, concurrency: env.concurrency },
  );
  worker.on('failed', (job, error) => tally.fail(new Error(`BullMQ: ${job?.id}: ${error.message}`)));
  const close = async () => {
    await worker.close(true);
    await queue.obliterate({ force: true });
    await queue.close();
    await dispatcher.close();
  };
  try {
    await worker.waitUntilReady();
    await queue.waitUntilReady();
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
  const options = { attempts: 8, backoff: { type: 'exponential', delay: 1_000 } };
  return {
    ids,
    lanes: PRODUCERS,
    done: tally.done,
    async enqueue(i) {
      await queue.add('callback', { id_gen: ids[i]! }, options);
    },
    close,
  };
}

/** Why Redis cannot take part (BullMQ is then left out), or undefined when it answers PING. */
export function probeRedis(): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect(REDIS.port, REDIS.host);
    const timer = setTimeout(() => finish('no answer within 2 s'), 2_000);
    function finish(problem: string | undefined) {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    }
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => finish(data.toString().startsWith('+PONG') ? undefined : String(data)));
    socket.once('error', (error) => finish(error.message));
  });
}
