/**
 * Ours on PostgreSQL with several worker processes: a backlog of due callbacks in one schema,
 * drained by 1, 2 or 4 processes, each a DeliveryWorker with the suite's concurrency, as
 * `mediahook worker` runs on machines sharing the database. Timed from the go given to every
 * process at once to the n-th callback received.
 *
 * Run as a script, it is one worker process; imported, {@link processesDrain} runs them.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CallbackSender, DeliveryWorker, DirectoryBlobStore } from '../packages/server/src/delivery/index.ts';
import { openStore } from '../packages/server/src/store/index.ts';
import { uuidv7Generator } from '../packages/mediahook/src/protocol/uuidv7.ts';
import type { Env } from './deliver-contenders.ts';
import { type Measure, median, type SuiteContext } from './harness.ts';
import { inLanes, openOutbox, POSTGRES_URL } from './deliver-outbox.ts';
import type { Receiver } from './deliver-receiver.ts';

interface ChildConfig {
  db: string;
  blobs: string;
  concurrency: number;
}

const nextId = uuidv7Generator();

/** Callbacks per second of `processes` worker processes draining `n` due callbacks. */
async function processesDrain(processes: number, n: number, env: Env, receiver: Receiver): Promise<number> {
  const outbox = await openOutbox('postgres', env.jpeg);
  const children: ChildProcess[] = [];
  try {
    const ids = Array.from({ length: n }, () => nextId());
    const result = { key: outbox.resultKey, media_type: 'image/jpeg' as const, bytes: env.jpeg.length };
    await inLanes(n, 8, async (i) => {
      const id = ids[i]!;
      await outbox.store.createOperation({
        id_gen: id,
        client: 'default',
        kind: 'image',
        family: 'A',
        webhook_url: `${env.origin}/cb/${id}`,
        prompt: 'bench',
      });
      await outbox.store.finishOperation(id, { state: 'succeeded', result });
    });
    await receiver.take(false);
    const config: ChildConfig = {
      db: `${POSTGRES_URL}?schema=${outbox.postgresSchema}`,
      blobs: (outbox.blobs as DirectoryBlobStore).directory,
      concurrency: env.concurrency,
    };
    const script = fileURLToPath(import.meta.url);
    for (let i = 0; i < processes; i++) {
      children.push(
        spawn(process.execPath, [...process.execArgv, script, JSON.stringify(config)], {
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        }),
      );
    }
    await Promise.all(children.map((child) => once(child, 'message')));
    const start = performance.now();
    for (const child of children) child.send('go');
    let received = 0;
    while (received < n) {
      await sleep(5);
      const got = await receiver.take(false);
      if (got.short > 0) throw new Error(`${got.short} callbacks arrived short`);
      received += got.count;
      if (children.some((child) => child.exitCode !== null)) throw new Error('a worker process exited');
    }
    if (received !== n) throw new Error(`the receiver got ${received} callbacks, expected ${n}`);
    return n / ((performance.now() - start) / 1000);
  } finally {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null) return;
        const exited = once(child, 'exit');
        child.kill();
        await exited;
      }),
    );
    await outbox.dispose();
  }
}

/** Worker processes of the rows: one, then as many as a small deployment runs. */
const PROCESS_COUNTS = [1, 2, 4] as const;

/**
 * The rows: each count of processes drains a fresh backlog, `rounds` times, counts interleaved.
 * `fetchRate` (the fetch+FormData loop's median, 16 in flight) is the peer of every row.
 */
export async function processesMeasures(
  ctx: SuiteContext,
  env: Env,
  receiver: Receiver,
  fetchRate: number | null,
): Promise<Measure[]> {
  const n = ctx.quick ? 600 : 4_000;
  const rounds = ctx.quick ? 1 : 3;
  const runs = new Map<number, number[]>(PROCESS_COUNTS.map((p) => [p, []]));
  for (let round = 0; round < rounds; round++) {
    for (const processes of PROCESS_COUNTS) {
      ctx.log(
        `processes: ${processes} worker process(es) draining ${n} callbacks, round ${round + 1} of ${rounds}`,
      );
      runs.get(processes)!.push(await processesDrain(processes, n, env, receiver));
    }
  }
  return PROCESS_COUNTS.map((processes) => ({
    id: `processes.postgres.${processes}`,
    label: `JPEG 64 KiB ×${n} due, ${processes} worker process${processes > 1 ? 'es' : ''} of ${env.concurrency} in flight: ours on PostgreSQL`,
    unit: 'callbacks/s',
    better: 'higher',
    ours: median(runs.get(processes)!),
    peers: { 'fetch+FormData': fetchRate, BullMQ: null },
    runs: { ours: runs.get(processes)! },
  }));
}

/** The child: a worker on the schema, started at the parent's go, until killed or orphaned. */
async function work(config: ChildConfig): Promise<void> {
  const store = openStore(config.db);
  const sender = new CallbackSender({ ssrf: { allowPrivate: true } });
  const worker = new DeliveryWorker({
    store,
    blobs: new DirectoryBlobStore(config.blobs),
    sender,
    concurrency: config.concurrency,
    perEndpointLimit: config.concurrency,
    onAttempt: ({ id_gen, attempt }) => {
      if (attempt.verdict !== 'delivered')
        throw new Error(`${id_gen}: ${attempt.error ?? attempt.status_code}`);
    },
    onError: (error) => {
      console.error(error);
      process.exit(1);
    },
  });
  process.once('message', () => void worker.start());
  process.send?.('ready');
  process.on('disconnect', () => process.exit(0));
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  void work(JSON.parse(process.argv[2]!) as ChildConfig);
