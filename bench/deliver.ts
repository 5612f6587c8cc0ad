/**
 * The deliver suite: sending 64 KiB JPEG callbacks to a local receiver. Ours (the durable
 * outbox drained by a DeliveryWorker, on SQLite and on PostgreSQL) against a non-durable
 * fetch + FormData loop and a BullMQ queue, for throughput at one concurrency, latency at a
 * fixed rate, and how the drain rate holds up under a large backlog.
 */
import { randomJpeg } from './bodies.ts';
import { CONTENDERS, type Contender, type Env, probeRedis } from './deliver-contenders.ts';
import { BESIDE, type Beside, fairnessRun, type FairnessRun, medianClaim } from './deliver-fairness.ts';
import { POSTGRES_URL, probePostgres } from './deliver-outbox.ts';
import { processesMeasures } from './deliver-processes.ts';
import { type Receiver, startReceiver } from './deliver-receiver.ts';
import { type Backlog, drain, type Latency, latency, loadedBacklog, throughput } from './deliver-runs.ts';
import {
  type Check,
  interleave,
  type Measure,
  median,
  ratio,
  type Suite,
  type SuiteContext,
  type SuiteResult,
} from './harness.ts';

/** Columns of the table: ours (on the backend each row names), then the peers. */
const OURS = 'ours';
const PEERS = ['fetch+FormData', 'BullMQ'] as const;
const BACKENDS = [
  { contender: 'ours (SQLite)', id: 'sqlite', name: 'SQLite' },
  { contender: 'ours (PostgreSQL)', id: 'postgres', name: 'PostgreSQL' },
] as const;

interface Sizes {
  /** Callbacks per timed throughput run (a quarter of it in the warm-up round). */
  callbacks: number;
  rounds: number;
  /** Latency: seconds measured at `rate`, after `warmup` seconds not counted. */
  rate: number;
  seconds: number;
  warmup: number;
  /** Contenders of the latency runs. */
  latency: readonly Contender[];
  /**
   * Drain: in each of `drainRounds` rounds a fresh small backlog is drained whole, and the
   * next `window` of one large backlog, loaded once with enough to hold `large` at every round.
   */
  small: number;
  large: number;
  window: number;
  drainRounds: number;
  /** Fairness: callbacks waiting at the other receiver, and claims timed beside them. */
  backlog: number;
  claims: number;
}

function sizesFor(quick: boolean): Sizes {
  return quick
    ? {
        callbacks: 300,
        rounds: 3,
        rate: 200,
        seconds: 3,
        // A fresh worker's first callbacks are slow (new connections, statements prepared on
        // the new file); at 200/s the queue they leave takes a while to drain.
        warmup: 1,
        latency: ['ours (SQLite)', 'ours (PostgreSQL)', 'fetch+FormData'],
        small: 1_000,
        large: 50_000,
        window: 1_000,
        drainRounds: 3,
        backlog: 20_000,
        claims: 50,
      }
    : {
        callbacks: 2_000,
        rounds: 5,
        rate: 200,
        seconds: 10,
        warmup: 1,
        latency: CONTENDERS,
        small: 10_000,
        large: 1_000_000,
        window: 10_000,
        // Single drains differ by more than the target's margin: five medians hold better than three.
        drainRounds: 5,
        backlog: 100_000,
        claims: 200,
      };
}

const CONCURRENCY = 16;
const JPEG_BYTES = 64 * 1024;

async function run(ctx: SuiteContext): Promise<SuiteResult> {
  const sizes = sizesFor(ctx.quick);
  const notes: string[] = [];
  const skipped = new Set<Contender>();
  const postgres = await probePostgres();
  if (postgres !== undefined) {
    skipped.add('ours (PostgreSQL)');
    notes.push(`PostgreSQL unreachable at ${POSTGRES_URL} (${postgres}): ours on PostgreSQL not run`);
  }
  const redis = await probeRedis();
  if (redis !== undefined) {
    skipped.add('BullMQ');
    notes.push(`Redis unreachable at 127.0.0.1:6379 (${redis}): BullMQ not run`);
  }
  const receiver = await startReceiver(JPEG_BYTES);
  try {
    const env: Env = { origin: receiver.origin, jpeg: randomJpeg(JPEG_BYTES), concurrency: CONCURRENCY };
    const contenders = CONTENDERS.filter((c) => !skipped.has(c));

    ctx.log(
      `throughput: ${sizes.rounds} rounds of ${sizes.callbacks} callbacks each: ${contenders.join(', ')}`,
    );
    const rates = await interleave(contenders, sizes.rounds, 1, (contender, timed) =>
      throughput(contender, timed ? sizes.callbacks : sizes.callbacks / 4, env, receiver),
    );

    const latencies = new Map<Contender, Latency>();
    for (const contender of sizes.latency.filter((c) => !skipped.has(c))) {
      ctx.log(`latency: ${contender}, ${sizes.rate}/s for ${sizes.seconds} s`);
      latencies.set(
        contender,
        await latency(contender, env, receiver, { ...sizes, duration: sizes.seconds }),
      );
    }

    const fetchRate = median((rates as Record<Contender, number[]>)['fetch+FormData'] ?? []);
    const processes = skipped.has('ours (PostgreSQL)')
      ? []
      : await processesMeasures(ctx, env, receiver, fetchRate);
    const drains = await drainRounds(ctx, sizes, env, receiver);
    const fairness = await fairnessRuns(ctx, sizes, skipped);

    const measures = [
      ...throughputMeasures(rates as Record<Contender, number[]>, sizes),
      ...latencyMeasures(latencies, sizes),
      ...processes,
      ...drainMeasures(drains, sizes),
      ...fairnessMeasures(fairness, sizes),
    ];
    notes.push(...describe(sizes, latencies, drains), fairnessNote(fairness, sizes));
    return { contenders: [OURS, ...PEERS], measures, checks: checks(measures), notes };
  } finally {
    await receiver.close();
  }
}

function throughputMeasures(rates: Record<Contender, number[]>, sizes: Sizes): Measure[] {
  const peers = Object.fromEntries(PEERS.map((p) => [p, rates[p] ?? []]));
  return BACKENDS.map(({ contender, id, name }) => {
    const runs = { [OURS]: rates[contender] ?? [], ...peers };
    return {
      id: `throughput.${id}`,
      label: `JPEG 64 KiB ×${sizes.callbacks}, ${CONCURRENCY} in flight: ours on ${name}`,
      unit: 'callbacks/s',
      better: 'higher',
      ours: median(runs[OURS]!),
      peers: Object.fromEntries(PEERS.map((p) => [p, median(peers[p]!)])),
      runs,
    };
  });
}

function latencyMeasures(latencies: Map<Contender, Latency>, sizes: Sizes): Measure[] {
  const measures: Measure[] = [];
  for (const { contender, id, name } of BACKENDS) {
    for (const q of ['p50', 'p99'] as const) {
      const of = (c: Contender) => latencies.get(c)?.[q] ?? null;
      const runs: Record<string, number[]> = {};
      for (const c of [contender, ...PEERS]) if (of(c) !== null) runs[c === contender ? OURS : c] = [of(c)!];
      measures.push({
        id: `latency.${id}.${q}`,
        label: `enqueue → received at ${sizes.rate}/s, ${q}: ours on ${name}`,
        unit: 'ms',
        better: 'lower',
        ours: of(contender),
        peers: Object.fromEntries(PEERS.map((p) => [p, of(p)])),
        runs,
      });
    }
  }
  return measures;
}

interface Drains {
  small: number[];
  large: number[];
  /** Rates over the first 1 000 deliveries of each run. */
  smallFirst: number[];
  largeFirst: number[];
  smallLoad: number;
  largeLoad: number;
}

/**
 * Drain runs, small and large alternating in a rotating order. The large backlog is loaded
 * once (a million rows take a while) with `(drainRounds - 1) × window` more than `large`, so
 * that each run starts with at least `large` due callbacks; every small run has a fresh one.
 */
async function drainRounds(ctx: SuiteContext, sizes: Sizes, env: Env, receiver: Receiver): Promise<Drains> {
  const drains: Drains = { small: [], large: [], smallFirst: [], largeFirst: [], smallLoad: 0, largeLoad: 0 };
  const largeSize = sizes.large + (sizes.drainRounds - 1) * sizes.window;
  ctx.log(`drain: loading a backlog of ${count(largeSize)} callbacks (SQLite)`);
  const large = await loadedBacklog(largeSize, env);
  drains.largeLoad = large.loadSeconds;
  try {
    const runSmall = async () => {
      const small: Backlog = await loadedBacklog(sizes.small, env);
      try {
        drains.smallLoad = Math.max(drains.smallLoad, small.loadSeconds);
        const d = await drain(small, sizes.small, env, receiver);
        drains.small.push(d.rate);
        drains.smallFirst.push(d.firstThousand);
      } finally {
        await small.outbox.dispose();
      }
    };
    const runLarge = async () => {
      const d = await drain(large, sizes.window, env, receiver);
      drains.large.push(d.rate);
      drains.largeFirst.push(d.firstThousand);
    };
    for (let round = 0; round < sizes.drainRounds; round++) {
      ctx.log(`drain: round ${round + 1} of ${sizes.drainRounds}`);
      for (const run of round % 2 === 0 ? [runSmall, runLarge] : [runLarge, runSmall]) await run();
    }
  } finally {
    await large.outbox.dispose();
  }
  return drains;
}

function drainMeasures(drains: Drains, sizes: Sizes): Measure[] {
  const row = (id: string, label: string, runs: number[]): Measure => ({
    id,
    label,
    unit: 'callbacks/s',
    better: 'higher',
    ours: median(runs),
    peers: Object.fromEntries(PEERS.map((p) => [p, null])),
    runs: { [OURS]: runs },
  });
  return [
    row('drain.small', `drain, backlog of ${count(sizes.small)}: all of it, on SQLite`, drains.small),
    row(
      'drain.large',
      `drain, backlog of ${count(sizes.large)}: ${count(sizes.window)} at a time, on SQLite`,
      drains.large,
    ),
  ];
}

type Fairness = Map<string, FairnessRun>;

/** Claims of one receiver's callbacks beside another's backlog, per backend and backlog state. */
async function fairnessRuns(ctx: SuiteContext, sizes: Sizes, skipped: Set<Contender>): Promise<Fairness> {
  const runs: Fairness = new Map();
  for (const { contender, id, name } of BACKENDS) {
    if (skipped.has(contender)) continue;
    ctx.log(`fairness: ${sizes.claims} claims beside a backlog of ${count(sizes.backlog)}, on ${name}`);
    for (const beside of BESIDE)
      runs.set(`${id}.${beside}`, await fairnessRun(id, beside, sizes.backlog, sizes.claims));
  }
  return runs;
}

const BESIDE_LABEL: Record<Beside, string> = {
  nothing: 'with nothing else waiting',
  down: 'beside a down receiver',
  capped: 'beside a receiver at its cap',
};

function fairnessMeasures(fairness: Fairness, sizes: Sizes): Measure[] {
  return BACKENDS.flatMap(({ id, name }) =>
    BESIDE.map((beside): Measure => {
      const run = fairness.get(`${id}.${beside}`);
      const waiting = beside === 'nothing' ? '' : ` (${count(sizes.backlog)} waiting)`;
      return {
        id: `fairness.${id}.${beside}`,
        label: `claim of one callback ${BESIDE_LABEL[beside]}${waiting}, on ${name}`,
        unit: 'ms',
        better: 'lower',
        ours: run ? medianClaim(run) : null,
        peers: Object.fromEntries(PEERS.map((p) => [p, null])),
        runs: { [OURS]: run?.claims ?? [] },
      };
    }),
  );
}

function fairnessNote(fairness: Fairness, sizes: Sizes): string {
  const opened = BACKENDS.map(({ id, name }) => {
    const ms = fairness.get(`${id}.down`)?.openedMs;
    return ms === undefined ? null : `${ms.toFixed(0)} ms on ${name}`;
  }).filter((x) => x !== null);
  return (
    `fairness: the store alone; another receiver's ${count(sizes.backlog)} callbacks bulk-loaded, then ` +
    'down (5 failed attempts open its circuit, which parks the rest) or at its cap (4 in flight); ' +
    `median of ${sizes.claims} claims of one callback (each then settled delivered); the settle that ` +
    `opened the circuit took ${opened.join(', ') || '—'}`
  );
}

/** 1000 → 1k, 1000000 → 1M. */
function count(n: number): string {
  return n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n);
}

function checks(measures: Measure[]): Check[] {
  const byId = new Map(measures.map((m) => [m.id, m]));
  const times = (value: number | null, atLeast: number, label: string): Check => ({
    label,
    value: value === null ? '—' : `${value.toFixed(2)}×`,
    pass: value === null ? null : value >= atLeast,
  });
  const sqlite = byId.get('throughput.sqlite')!;
  const result = [
    times(
      ratio(sqlite.ours, sqlite.peers['fetch+FormData'] ?? null),
      0.8,
      'durable delivery on SQLite ≥ 0.8× the fetch+FormData loop',
    ),
    times(ratio(sqlite.ours, sqlite.peers.BullMQ ?? null), 2, 'durable delivery on SQLite ≥ 2× BullMQ'),
  ];
  for (const { id, name } of BACKENDS) {
    for (const [q, limit] of [
      ['p50', 5],
      ['p99', 25],
    ] as const) {
      const value = byId.get(`latency.${id}.${q}`)?.ours ?? null;
      result.push({
        label: `latency ${q} ≤ ${limit} ms at 200/s, ours on ${name}`,
        value: value === null ? '—' : `${value.toFixed(1)} ms`,
        pass: value === null ? null : value <= limit,
      });
    }
  }
  const small = byId.get('drain.small')!.ours;
  const large = byId.get('drain.large')!.ours;
  result.push(times(ratio(large, small), 0.9, 'large backlog drained at ≥ 0.9× the rate of the small one'));
  return result;
}

function describe(sizes: Sizes, latencies: Map<Contender, Latency>, drains: Drains): string[] {
  const notes = [
    `receiver: a bare node:http server in its own process (reads each body, answers 200), the same for all; ` +
      `every run checks it got every callback whole`,
    `throughput: from the first enqueue to the last 2xx; median of ${sizes.rounds} interleaved rounds after a ` +
      `warm-up round; ${CONCURRENCY} requests in flight for all; ours and BullMQ enqueue from 4 concurrent producers`,
    `ours: one DeliveryWorker (concurrency ${CONCURRENCY}, per-receiver cap ${CONCURRENCY}: one receiver here), ` +
      'a fresh SQLite file or PostgreSQL schema per run; enqueue = finishOperation (operations created untimed)',
    'BullMQ: Queue#add (attempts 8, exponential backoff), a Worker of the same concurrency posting with ' +
      'undici fetch + FormData; fetch+FormData: the same POST with no queue at all (not durable)',
  ];
  for (const [contender, l] of latencies) {
    notes.push(
      `latency ${contender}: ${l.count} callbacks counted after ${sizes.warmup} s of warm-up, ` +
        `${l.rate.toFixed(0)}/s kept; ` +
        `p50 ${l.p50.toFixed(2)} ms, p99 ${l.p99.toFixed(2)} ms, max ${l.max.toFixed(1)} ms`,
    );
  }
  const rates = (runs: number[]) => runs.map((r) => r.toFixed(0)).join(', ');
  notes.push(
    `drain: backlogs bulk-loaded with the worker stopped (${count(sizes.small)} in ${drains.smallLoad.toFixed(1)} s, ` +
      `${count(sizes.large + (sizes.drainRounds - 1) * sizes.window)} once in ${drains.largeLoad.toFixed(1)} s), ` +
      `each run timed from a fresh worker's start; median of ${sizes.drainRounds} alternating runs: ` +
      `small ${rates(drains.small)}/s, large ${rates(drains.large)}/s; ` +
      `first 1k of each: small ${rates(drains.smallFirst)}/s, large ${rates(drains.largeFirst)}/s`,
  );
  return notes;
}

export const suite: Suite = {
  name: 'deliver',
  description:
    'delivering 64 KiB JPEG callbacks to a local receiver: ours (durable outbox, SQLite / PostgreSQL) vs a fetch+FormData loop and BullMQ',
  run,
};
