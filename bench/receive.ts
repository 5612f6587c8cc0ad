/**
 * The receive suite: callbacks received over loopback HTTP and stored on disk, ours against the
 * servers a receiver would otherwise be built with. Each server runs in a process of its own
 * (receive-servers.ts), the load in another (receive-load.ts); this process only conducts.
 */
import { mkdtemp, rm, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  type Check,
  emptyRuns,
  interleave,
  type Measure,
  measuresOver,
  ratio,
  ratioCheck,
  type Suite,
  type SuiteContext,
  type SuiteResult,
} from './harness.ts';
import { CONNECTIONS, checkJpegRun, checkUpload, JPEG_BYTES } from './receive-checks.ts';
import type { LoadResult, UploadResult } from './receive-load.ts';
import { startWorker, type Worker } from './receive-proc.ts';
import { SERVER_KINDS, type ServerKind } from './receive-kinds.ts';
import type { ServerCounts } from './receive-servers.ts';

const PEERS = SERVER_KINDS.filter((kind) => kind !== 'ours');
const CONTENDERS: readonly ServerKind[] = ['ours', ...PEERS];

const measure = measuresOver(PEERS);
/**
 * Who takes part in each measure; the raw servers are yardsticks, not receivers. The JPEG runs
 * leave out busboy-fs (Fastify and Express as usually written stand for that reading there) and
 * raw-tcp (one connection per body).
 */
const JPEG_SERVERS = SERVER_KINDS.filter((kind) => kind !== 'busboy-fs' && kind !== 'raw-tcp');
const UPLOAD_SERVERS: readonly ServerKind[] = [
  'ours',
  'busboy',
  'busboy-fs',
  'raw-sink',
  'raw-http',
  'raw-tcp',
];

const KiB = 1024;
const MiB = 1024 * KiB;

/** The project's bound on what receiving a 1 GiB file may add to the server's RSS. */
const RSS_TARGET_MIB = 64;

interface Plan {
  /**
   * Upload runs per server. An upload's time on the disk here is bimodal (the same server took
   * 0.24–0.28 s or 0.49–0.50 s in one run, with the kernel busy or not after the JPEG phases):
   * a median of 9 lands less often on the slow mode by chance than one of 5.
   */
  uploadRounds: number;
  /** JPEG runs with the out dir on disk: seconds per timed run and for the warm-up run. */
  disk: { timed: number; warm: number; rounds: number };
  /** The same on tmpfs, where an fsync costs next to nothing: the servers' own cost shows. */
  tmpfs: { timed: number; warm: number; rounds: number } | null;
  uploadBytes: number;
  warmUploadBytes: number;
  rssBytes: number;
  rssRuns: number;
  rssServers: readonly ServerKind[];
}

function planFor(quick: boolean): Plan {
  if (quick) {
    return {
      uploadRounds: 3,
      disk: { timed: 1, warm: 0.5, rounds: 3 },
      tmpfs: null,
      uploadBytes: 256 * MiB,
      warmUploadBytes: 16 * MiB,
      rssBytes: 256 * MiB,
      rssRuns: 1,
      rssServers: ['ours'],
    };
  }
  return {
    uploadRounds: 9,
    disk: { timed: 5, warm: 2, rounds: 5 },
    tmpfs: { timed: 3, warm: 1, rounds: 5 },
    uploadBytes: 256 * MiB,
    warmUploadBytes: 64 * MiB,
    rssBytes: 1024 * MiB,
    rssRuns: 3,
    rssServers: ['ours', 'busboy', 'raw-http'],
  };
}

const mibLabel = (bytes: number) =>
  bytes >= 1024 * MiB ? `${bytes / (1024 * MiB)} GiB` : `${bytes / MiB} MiB`;

/**
 * With MEDIAHOOK_BENCH_CPU_PROF=<dir>, every server writes a CPU profile (`node --cpu-prof`) into
 * <dir> when it stops: where a server spends its time, in the very runs that are measured.
 */
const PROFILE_DIR = process.env.MEDIAHOOK_BENCH_CPU_PROF;
const SERVER_FLAGS = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];

/** Starts one server per kind, all at once (each start is mostly loading modules). */
async function startServers(root: string, kinds: readonly ServerKind[]): Promise<Map<ServerKind, Worker>> {
  const started = await Promise.allSettled(
    kinds.map((kind) => startWorker('./receive-servers.ts', [kind, join(root, kind)], SERVER_FLAGS)),
  );
  const servers = new Map<ServerKind, Worker>();
  started.forEach((s, i) => s.status === 'fulfilled' && servers.set(kinds[i]!, s.value));
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    await stopAll(servers);
    throw (failed as PromiseRejectedResult).reason;
  }
  return servers;
}

async function stopAll(servers: Map<ServerKind, Worker>): Promise<void> {
  await Promise.all([...servers.values()].map((s) => s.stop()));
  servers.clear();
}

interface JpegFigures {
  rate: Record<string, number[]>;
  p99: Record<string, number[]>;
  /** Server CPU time (all threads) per answered request, µs. */
  cpu: Record<string, number[]>;
  files: number;
}

/** Requests/s, latency and CPU of 64 KiB JPEG callbacks, every server interleaved with the others. */
async function jpegPhase(
  ctx: SuiteContext,
  where: string,
  seconds: { timed: number; warm: number; rounds: number },
  loader: Worker,
  root: string,
): Promise<JpegFigures> {
  const servers = await startServers(root, JPEG_SERVERS);
  const p99 = emptyRuns(JPEG_SERVERS);
  const cpu = emptyRuns(JPEG_SERVERS);
  let files = 0;
  try {
    ctx.log(
      `JPEG 64 KiB, ${where}: ${seconds.rounds} rounds × ${seconds.timed} s of ${JPEG_SERVERS.join(', ')}`,
    );
    const rate = await interleave(JPEG_SERVERS, seconds.rounds, 1, async (kind, timed) => {
      const server = servers.get(kind)!;
      const duration = timed ? seconds.timed : seconds.warm;
      const load = await loader.call<LoadResult>(
        'jpeg',
        { port: server.port, connections: CONNECTIONS, seconds: duration, fileBytes: JPEG_BYTES },
        (duration + 30) * 1000,
      );
      const got = await server.call<ServerCounts>('clean', undefined, 60_000);
      checkJpegRun(kind, load, got);
      files += got.files;
      if (timed) {
        p99[kind]!.push(load.p99Ms);
        cpu[kind]!.push(got.cpuMicros / got.ok);
      }
      return load.requestsPerSecond;
    });
    return { rate, p99, cpu, files };
  } finally {
    await stopAll(servers);
  }
}

/** Time to receive one large MP4 callback, ours against busboy and the raw yardsticks. */
async function uploadPhase(
  ctx: SuiteContext,
  where: string,
  kinds: readonly ServerKind[],
  plan: Plan,
  loader: Worker,
  root: string,
) {
  const servers = await startServers(root, kinds);
  const time = emptyRuns(kinds);
  const cpu = emptyRuns(kinds);
  try {
    ctx.log(
      `MP4 ${mibLabel(plan.uploadBytes)} upload, ${where}: ${plan.uploadRounds} rounds of ${kinds.join(', ')}`,
    );
    const speed = await interleave(kinds, plan.uploadRounds, 1, async (kind, timed) => {
      const server = servers.get(kind)!;
      const fileBytes = timed ? plan.uploadBytes : plan.warmUploadBytes;
      let seconds: number;
      let bytes = fileBytes;
      if (kind === 'raw-tcp') {
        ({ seconds } = await loader.call<{ seconds: number }>('tcp', { port: server.port, bytes }));
      } else {
        const up = await loader.call<UploadResult>('upload', { port: server.port, fileBytes });
        ({ seconds, bytes } = up);
        const got = await server.call<ServerCounts>('clean', undefined, 60_000);
        checkUpload(kind, fileBytes, up, got);
        if (timed) cpu[kind]!.push(got.cpuMicros / 1e6);
      }
      if (timed) time[kind]!.push(seconds);
      return bytes / seconds / 1e6;
    });
    return { speed, time, cpu };
  } finally {
    await stopAll(servers);
  }
}

/**
 * RSS of a server receiving one very large callback: a fresh process per run, one small
 * callback first (so that modules and code are loaded), then a full GC, the peak mark reset,
 * the upload, and the peak read.
 */
async function rssPhase(ctx: SuiteContext, plan: Plan, loader: Worker, root: string) {
  const kinds = plan.rssServers;
  const growth = emptyRuns(kinds);
  const peak = emptyRuns(kinds);
  ctx.log(`MP4 ${mibLabel(plan.rssBytes)} upload: RSS of ${kinds.join(', ')}, ${plan.rssRuns} run(s) each`);
  for (let run = 0; run < plan.rssRuns; run++) {
    for (let i = 0; i < kinds.length; i++) {
      const kind = kinds[(i + run) % kinds.length]!;
      const servers = await startServers(root, [kind]);
      try {
        const server = servers.get(kind)!;
        await loader.call<UploadResult>('upload', { port: server.port, fileBytes: MiB });
        await server.call<ServerCounts>('clean');
        await server.call('mark');
        const up = await loader.call<UploadResult>('upload', { port: server.port, fileBytes: plan.rssBytes });
        const memory = await server.call<{ baseline: number; peak: number }>('memory');
        checkUpload(kind, plan.rssBytes, up, await server.call<ServerCounts>('clean', undefined, 60_000));
        growth[kind]!.push(Math.max(0, memory.peak - memory.baseline));
        peak[kind]!.push(memory.peak);
      } finally {
        await stopAll(servers);
      }
    }
  }
  return { growth, peak };
}

/**
 * How far the sink alone goes beyond the peers on it: no receiver writing through that sink can
 * answer more than raw-sink, so these ratios bound what parsing faster can gain there.
 */
function ceilingNote(rate: Measure, best: string, speed: Measure): string {
  const shown = (value: number | null) => (value === null ? '—' : `${value.toFixed(2)}×`);
  const sink = (m: Measure) => m.peers['raw-sink'] ?? null;
  return (
    `ceiling on the project DiskSink: raw-sink answers ${shown(ratio(sink(rate), rate.peers[best] ?? null))} ` +
    `${best}'s JPEG requests/s and uploads at ${shown(ratio(sink(speed), speed.peers.busboy ?? null))} ` +
    "busboy's speed on the same sink; ours is at " +
    `${shown(ratio(rate.ours, sink(rate)))} and ${shown(ratio(speed.ours, sink(speed)))} of raw-sink`
  );
}

/** A directory on tmpfs for the JPEG runs without disk cost, or null where there is none. */
async function tmpfsRoot(): Promise<string | null> {
  const shm = '/dev/shm';
  const fs = await statfs(shm).catch(() => null);
  return fs?.type === TMPFS_MAGIC ? mkdtemp(join(shm, 'mediahook-receive-')) : null;
}

const TMPFS_MAGIC = 0x01021994;

async function run(ctx: SuiteContext): Promise<SuiteResult> {
  const plan = planFor(ctx.quick);
  const root = await mkdtemp(join(process.env.MEDIAHOOK_BENCH_DISK_DIR ?? tmpdir(), 'mediahook-receive-'));
  const notes: string[] = [];
  // The disk figures must include real fsyncs: say so when the temp dir is in memory.
  if ((await statfs(root)).type === TMPFS_MAGIC) {
    notes.push(`${root} is on tmpfs: the "disk" figures are not; set MEDIAHOOK_BENCH_DISK_DIR`);
  }
  // Runs on tmpfs, where an fsync costs next to nothing, show what the servers cost themselves.
  const shm = plan.tmpfs ? await tmpfsRoot() : null;
  const loader = await startWorker('./receive-load.ts', ['loader']);
  try {
    // Each phase says how long it took: the suite's time budget is spent in very unequal parts.
    const phase = async <T>(fn: () => Promise<T>): Promise<T> => {
      const started = performance.now();
      const result = await fn();
      ctx.log(`(${((performance.now() - started) / 1000).toFixed(0)} s)`);
      return result;
    };
    const disk = await phase(() => jpegPhase(ctx, 'disk', plan.disk, loader, root));
    const mem =
      plan.tmpfs && shm ? await phase(() => jpegPhase(ctx, 'tmpfs', plan.tmpfs!, loader, shm)) : null;
    const upload = await phase(() => uploadPhase(ctx, 'disk', UPLOAD_SERVERS, plan, loader, root));
    const upMem = shm
      ? await phase(() => uploadPhase(ctx, 'tmpfs', ['ours', 'busboy'], plan, loader, shm))
      : null;
    const rss = await phase(() => rssPhase(ctx, plan, loader, root));

    const up = `MP4 ${mibLabel(plan.uploadBytes)} upload`;
    const big = `MP4 ${mibLabel(plan.rssBytes)} upload`;
    const rate = measure('jpeg.rate', 'JPEG 64 KiB, disk: requests/s', '1/s', 'higher', disk.rate);
    const speed = measure('upload.throughput', `${up}, disk: throughput`, 'MB/s', 'higher', upload.speed);
    const growth = measure('rss.growth', `${big}: server RSS growth`, 'MiB', 'lower', rss.growth);
    growth.floor = 1;
    const measures = [
      rate,
      measure('jpeg.p99', 'JPEG 64 KiB, disk: p99 latency', 'ms', 'lower', disk.p99),
      measure('jpeg.cpu', 'JPEG 64 KiB, disk: server CPU per request', 'µs', 'lower', disk.cpu),
      ...(mem
        ? [
            measure('tmpfs.rate', 'JPEG 64 KiB, tmpfs: requests/s', '1/s', 'higher', mem.rate),
            measure('tmpfs.p99', 'JPEG 64 KiB, tmpfs: p99 latency', 'ms', 'lower', mem.p99),
            measure('tmpfs.cpu', 'JPEG 64 KiB, tmpfs: server CPU per request', 'µs', 'lower', mem.cpu),
          ]
        : []),
      speed,
      measure('upload.time', `${up}, disk: time`, 's', 'lower', upload.time),
      measure('upload.cpu', `${up}, disk: server CPU time`, 's', 'lower', upload.cpu),
      ...(upMem
        ? [
            measure('tmpfs.upload', `${up}, tmpfs: throughput`, 'MB/s', 'higher', upMem.speed),
            measure('tmpfs.upload.cpu', `${up}, tmpfs: server CPU time`, 's', 'lower', upMem.cpu),
          ]
        : []),
      measure('rss.peak', `${big}: server peak RSS`, 'MiB', 'lower', rss.peak),
      growth,
    ];
    const bestOf = (a: string, b: string) => ((rate.peers[b] ?? 0) > (rate.peers[a] ?? 0) ? b : a);
    const best = bestOf('fastify', 'express');
    const bestFs = bestOf('fastify-fs', 'express-fs');
    const checks: Check[] = [
      ratioCheck(`ours ≥ 1.5× the best of fastify and express (${best}) in JPEG requests/s`, rate, best, 1.5),
      ratioCheck(
        `ours ≥ 1.5× the best of them as usually written (${bestFs}) in JPEG requests/s`,
        rate,
        bestFs,
        1.5,
      ),
      ratioCheck(`ours ≥ 1.5× busboy as usually written (busboy-fs) on the ${up}`, speed, 'busboy-fs', 1.5),
      ratioCheck(`ours ≥ 1.5× busboy on the project's DiskSink on the ${up}`, speed, 'busboy', 1.5),
      {
        label: `ours: RSS growth ≤ ${RSS_TARGET_MIB} MiB while receiving the ${big}`,
        value: growth.ours === null ? '—' : `${growth.ours.toFixed(1)} MiB`,
        pass: growth.ours === null ? null : growth.ours <= RSS_TARGET_MIB,
      },
    ];
    notes.push(
      `each server is a process of its own; the load comes from another (autocannon, ${CONNECTIONS} ` +
        'keep-alive connections, one request at a time each); all on 127.0.0.1',
      'the machine has 2 cores: a server, its libuv threads and the load generator share them',
      'every storing server but the -fs ones puts the file into the project DiskSink (temp file, ' +
        'writev, fsync, rename, directory fsync); the -fs ones are the peers as usually written ' +
        "(busboy and @fastify/multipart piped into fs.createWriteStream, multer's diskStorage), then " +
        'fsync, rename and directory fsync; ours keeps receipts in a MemoryReceiptStore and hashes ' +
        'each file (SHA-256), which no peer does',
      `JPEG: median of ${plan.disk.rounds} interleaved runs of ${plan.disk.timed} s (tmpfs: ` +
        `${mem && plan.tmpfs ? `${plan.tmpfs.timed} s` : ctx.quick ? 'not with --quick' : 'no tmpfs'}) ` +
        'after a warm-up run; ' +
        `${disk.files + (mem?.files ?? 0)} stored files counted and sized; server CPU is all its threads`,
      `uploads: median of ${plan.uploadRounds} interleaved runs after a warm-up; MB = 10^6 bytes of request ` +
        `body; RSS: median of ${plan.rssRuns} fresh server process(es)`,
      'raw-http reads the body and answers 200 (no parsing, no storing); raw-sink puts the whole body ' +
        'into the project DiskSink with no parsing at all; raw-tcp counts the bytes of one connection: ' +
        'the limits of the machine and of the sink, not receivers',
      ceilingNote(rate, best, speed),
    );
    return { contenders: [...CONTENDERS], measures, checks, notes };
  } finally {
    await loader.stop();
    await rm(root, { recursive: true, force: true });
    if (shm) await rm(shm, { recursive: true, force: true });
  }
}

export const suite: Suite = {
  name: 'receive',
  description:
    'receiving callbacks over loopback HTTP into files on disk: ours vs Fastify+@fastify/multipart, ' +
    'Express+multer, Hono, busboy, on the project sink and as usually written',
  run,
};
