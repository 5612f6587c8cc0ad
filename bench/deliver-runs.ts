/**
 * The three kinds of run of the deliver suite: throughput (first enqueue to last 2xx),
 * latency at a fixed rate (enqueue to arrival at the receiver), and the drain of a backlog.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Contender, type Env, openSender, ourWorker } from './deliver-contenders.ts';
import { inLanes, loadBacklog, openOutbox, type Outbox } from './deliver-outbox.ts';
import { monotonicMs, type Receiver } from './deliver-receiver.ts';

/** Checks that the receiver got exactly the `n` whole callbacks of a run, and resets it. */
async function expectReceived(receiver: Receiver, n: number, what: string, arrivals = false) {
  const got = await receiver.take(arrivals);
  if (got.count !== n || got.short !== 0) {
    throw new Error(`${what}: the receiver got ${got.count} requests (${got.short} short), expected ${n}`);
  }
  return got;
}

/** Callbacks per second from the first enqueue to the n-th 2xx. */
export async function throughput(contender: Contender, n: number, env: Env, receiver: Receiver) {
  await receiver.take(false);
  const sender = await openSender(contender, n, env);
  try {
    const start = performance.now();
    await inLanes(n, sender.lanes, (i) => sender.enqueue(i));
    const end = await sender.done;
    await expectReceived(receiver, n, contender);
    return n / ((end - start) / 1000);
  } finally {
    await sender.close();
  }
}

/** The value below which a fraction `q` of `sorted` lies (nearest rank). */
function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export interface Latency {
  p50: number;
  p99: number;
  max: number;
  /** Callbacks counted (those of the warm-up are not). */
  count: number;
  /** The enqueue rate actually kept (a loaded machine may fall behind the schedule). */
  rate: number;
}

/**
 * Enqueues at a fixed `rate` for `warmup` + `duration` seconds, on a schedule that does not
 * wait for earlier callbacks (a late tick enqueues at once), and measures each callback from
 * just before its enqueue to the arrival of its last byte at the receiver, both read on the
 * monotonic clock the two processes share. The warm-up's callbacks are not counted.
 */
export async function latency(
  contender: Contender,
  env: Env,
  receiver: Receiver,
  options: { rate: number; duration: number; warmup: number },
): Promise<Latency> {
  const skip = Math.round(options.rate * options.warmup);
  const n = skip + Math.round(options.rate * options.duration);
  await receiver.take(false);
  const sender = await openSender(contender, n, env);
  try {
    const enqueuedAt = new Float64Array(n);
    const enqueues: Promise<void>[] = [];
    const interval = 1000 / options.rate;
    const start = performance.now();
    for (let i = 0; i < n; i++) {
      const wait = start + i * interval - performance.now();
      if (wait > 0) await sleep(wait);
      enqueuedAt[i] = monotonicMs();
      enqueues.push(sender.enqueue(i));
    }
    const scheduled = (performance.now() - start) / 1000;
    await Promise.all(enqueues);
    await sender.done;
    const got = await expectReceived(receiver, n, contender, true);
    const arrivals = new Map(got.arrivals);
    const latencies: number[] = [];
    for (let i = skip; i < n; i++) {
      const at = arrivals.get(`/cb/${sender.ids[i]}`);
      if (at === undefined) throw new Error(`${contender}: callback ${i} never arrived`);
      latencies.push(at - enqueuedAt[i]!);
    }
    latencies.sort((a, b) => a - b);
    return {
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      max: latencies[latencies.length - 1]!,
      count: latencies.length,
      rate: (n - 1) / scheduled,
    };
  } finally {
    await sender.close();
  }
}

interface Drain {
  /** Callbacks per second over the first `counted` deliveries. */
  rate: number;
  /** Callbacks per second over the first 1 000 only (the start of the drain). */
  firstThousand: number;
  counted: number;
}

/** An outbox on SQLite holding a backlog of due callbacks, loaded while no worker ran. */
export interface Backlog {
  outbox: Outbox;
  size: number;
  /** Seconds the bulk load took (untimed). */
  loadSeconds: number;
}

/** A fresh SQLite outbox with `size` due callbacks, bulk-loaded. */
export async function loadedBacklog(size: number, env: Env): Promise<Backlog> {
  const outbox = await openOutbox('sqlite', env.jpeg);
  try {
    const loading = performance.now();
    loadBacklog(outbox, size, env.origin, env.jpeg.length);
    return { outbox, size, loadSeconds: (performance.now() - loading) / 1000 };
  } catch (error) {
    await outbox.dispose();
    throw error;
  }
}

/**
 * Ours on SQLite draining a backlog: a fresh worker is started and timed to its `counted`-th
 * delivery (all of the backlog, or a stretch of one too large to drain within the run), then
 * stopped. What it did not deliver stays due, so one large backlog serves several runs.
 */
export async function drain(backlog: Backlog, counted: number, env: Env, receiver: Receiver): Promise<Drain> {
  await receiver.take(false);
  let delivered = 0;
  let thousandAt = 0;
  let failure: Error | undefined;
  let reached: () => void = () => {};
  const done = new Promise<void>((resolve) => (reached = resolve));
  const { worker, sender } = ourWorker(backlog.outbox, env.concurrency, {
    ok() {
      delivered++;
      if (delivered === Math.min(1000, counted)) thousandAt = performance.now();
      if (delivered === counted) reached();
    },
    fail(error) {
      // Attempts cut short by the stop below are not the drain's failures.
      if (delivered < counted) failure ??= error;
      reached();
    },
  });
  const start = performance.now();
  try {
    await worker.start();
    await done;
    if (failure) throw failure;
    const end = performance.now();
    return {
      rate: counted / ((end - start) / 1000),
      firstThousand: Math.min(1000, counted) / ((thousandAt - start) / 1000),
      counted,
    };
  } finally {
    await worker.stop(0);
    await sender.close();
    await receiver.take(false);
  }
}
