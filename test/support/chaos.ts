/**
 * Chaos: the delivery worker (in process, on SQLite) sends callbacks to the chaos receiver with
 * a compressed retry schedule and short sender timeouts. Every callback must end delivered,
 * gone or correctly dead, every request the receiver saw must be an attempt in the store with
 * the status it was answered, and the worker must end with no slot and no descriptor held.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import {
  CallbackSender,
  DeliveryWorker,
  blobKeyOf,
  DirectoryBlobStore,
  type RetryPolicy,
} from '../../packages/server/src/delivery/index.ts';
import { uuidv7Generator } from '../../packages/mediahook/src/protocol/uuidv7.ts';
import { type AttemptRecord, openStore, type Store } from '../../packages/server/src/store/index.ts';
import { type Behaviour, type ChaosRequest, startChaosReceiver } from './chaos-receiver.ts';
import { tempDir, until } from './processes.ts';

interface ChaosOptions {
  callbacks: number;
  /**
   * One callback in this many carries a 12 MiB file: more than loopback socket buffers hold, so
   * resets and slow reads hit it mid-upload.
   */
  largeEvery: number;
  seed: number;
  settleMs: number;
}

interface ChaosFigures {
  callbacks: number;
  receiverRequests: number;
  attemptsRecorded: number;
  behaviours: Record<string, number>;
  finalStates: Record<string, number>;
  attemptErrors: Record<string, number>;
  /** Callbacks not final when the run ended. */
  notFinal: string[];
  /** Ids whose attempts in the store do not match the requests the receiver saw. */
  attemptMismatches: string[];
  /** Ids whose final state is not what their attempts call for. */
  wrongFinalState: string[];
  inflightAfter: number;
  openConnectionsAtRest: number;
  fdsBefore: number;
  fdsAfter: number;
  workerErrors: string[];
  seconds: number;
}

/** Retries after 50 ms to 400 ms: six tries in all, then dead. */
const CHAOS_RETRY: RetryPolicy = {
  schedule: [50, 100, 200, 300, 400],
  jitter: 0.1,
  retryAfterMinMs: 0,
  retryAfterMaxMs: 1_000,
};

/**
 * Descriptors open in this process, but for the store's database files: the store's SQLite
 * checkpoint thread opens the WAL when it first checkpoints, at a moment of its own, and what is
 * counted here is what the worker and its sender open.
 */
const fdCount = (database: string) =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return !readlinkSync(`/proc/self/fd/${fd}`).startsWith(database);
    } catch {
      return false; // closed since the listing (the listing's own descriptor, for one)
    }
  }).length;

function jpeg(size: number): Buffer {
  const bytes = randomBytes(size);
  bytes.set([0xff, 0xd8, 0xff, 0xe0]);
  return bytes;
}

function tally(into: Record<string, number>, key: string): void {
  into[key] = (into[key] ?? 0) + 1;
}

/** Whether one stored attempt is what the receiver did with the matching request. */
function attemptMatches(attempt: AttemptRecord, request: ChaosRequest): boolean {
  if (request.answered !== null) {
    // An answer may come after the sender gave up (a slow read, or a loaded machine): then the
    // attempt has no status, and says why.
    const late =
      attempt.status_code === null && /^(response_timeout|upload_stalled)/.test(attempt.error ?? '');
    return attempt.status_code === request.answered || late;
  }
  return attempt.status_code === null && attempt.error !== null;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosFigures> {
  const started = performance.now();
  const dir = await tempDir('chaos');
  const receiver = await startChaosReceiver(options.seed, 100);
  const database = join(dir.path, 'store.sqlite');
  const store: Store = openStore(database);
  await store.migrate();
  const blobs = new DirectoryBlobStore(join(dir.path, 'results'));
  const nextId = uuidv7Generator();
  const ids: string[] = [];
  for (let n = 0; n < options.callbacks; n++) {
    const id = nextId();
    ids.push(id);
    // The receiver keys its behaviour on the index in the path, not on the (time-based) id_gen,
    // so that a seed always makes the same run.
    await store.createOperation({
      id_gen: id,
      client: 'default',
      kind: 'image',
      family: 'A',
      webhook_url: receiver.url(String(n)),
      prompt: `chaos ${n}`,
    });
    if (n % 3 === 0) {
      await store.finishOperation(id, { state: 'failed', message: `chaos ${n} failed` });
    } else {
      const bytes = jpeg(n % options.largeEvery === 1 ? 12 * 1024 * 1024 : 4096);
      const key = blobKeyOf(id, 'image/jpeg');
      await blobs.put(key, [bytes]);
      await store.finishOperation(id, {
        state: 'succeeded',
        result: { key, media_type: 'image/jpeg', bytes: bytes.length },
      });
    }
  }
  const fdsBefore = fdCount(database);
  const workerErrors: string[] = [];
  const sender = new CallbackSender({
    ssrf: { allowPrivate: true },
    connectTimeoutMs: 1_000,
    responseTimeoutMs: 1_500,
    minUploadBytesPerSecond: 256 * 1024,
    uploadStallWindowMs: 400,
  });
  const worker = new DeliveryWorker({
    store,
    blobs,
    sender,
    retry: CHAOS_RETRY,
    concurrency: 16,
    perEndpointLimit: 8,
    leaseMs: 60_000,
    // Opens now and then, so waiting behind an open circuit is exercised too.
    circuit: { failureThreshold: 8, openMs: 100, maxOpenMs: 400 },
    onError: (error) => workerErrors.push(String(error)),
  });
  const figures: ChaosFigures = {
    callbacks: options.callbacks,
    receiverRequests: 0,
    attemptsRecorded: 0,
    behaviours: {},
    finalStates: {},
    attemptErrors: {},
    notFinal: [],
    attemptMismatches: [],
    wrongFinalState: [],
    inflightAfter: -1,
    openConnectionsAtRest: -1,
    fdsBefore,
    fdsAfter: -1,
    workerErrors,
    seconds: 0,
  };
  try {
    await worker.start();
    const finalStates = new Set(['delivered', 'dead', 'gone']);
    await until(
      async () => {
        const depth = await store.queueDepth();
        return Object.entries(depth.callbacks).every(([state, n]) => n === 0 || finalStates.has(state));
      },
      options.settleMs,
      200,
    );
    // Every delivery has been recorded; the worker must hold nothing now.
    await until(() => worker.inflight === 0, 5_000, 50);
    figures.inflightAfter = worker.inflight;
    figures.openConnectionsAtRest = await receiver.openConnections();
    const seen = receiver.byId();
    figures.receiverRequests = receiver.requests.length;
    for (const request of receiver.requests) tally(figures.behaviours, request.behaviour);
    for (const [n, id] of ids.entries()) {
      const callback = await store.getCallback(id);
      const attempts = await store.listAttempts(id);
      const requests = seen.get(String(n)) ?? [];
      figures.attemptsRecorded += attempts.length;
      const state = callback?.state ?? 'missing';
      tally(figures.finalStates, state);
      for (const attempt of attempts)
        tally(figures.attemptErrors, attempt.error?.split(':')[0] ?? String(attempt.status_code));
      if (!finalStates.has(state)) figures.notFinal.push(id);
      if (attempts.length !== requests.length || attempts.some((a, i) => !attemptMatches(a, requests[i]!))) {
        figures.attemptMismatches.push(id);
      }
      const last = attempts.at(-1);
      const ok = (a: AttemptRecord | undefined) =>
        a?.status_code !== null && a!.status_code! >= 200 && a!.status_code! < 300;
      const expectedState =
        last === undefined
          ? 'missing'
          : ok(last)
            ? 'delivered'
            : last.status_code === 410
              ? 'gone'
              : attempts.length === CHAOS_RETRY.schedule.length + 1 && !attempts.some(ok)
                ? 'dead'
                : 'not final';
      if (expectedState !== state)
        figures.wrongFinalState.push(`${id}: ${state}, attempts ${describeAttempts(attempts, requests)}`);
    }
  } finally {
    await worker.stop(0);
    await sender.close();
    // A slow reader may still be draining an upload its sender gave up on: its socket closes
    // once it reads the end, and it must not be mistaken for one the sender left open.
    await until(() => receiver.slowReadsInProgress() === 0, 20_000, 50);
    // Compared with the count taken just before the worker started, the store and the receiver
    // still open: what the worker and its sender opened must all be closed. Sockets close
    // asynchronously, so the event loop is given a moment.
    await until(() => fdCount(database) <= fdsBefore, 3_000, 50);
    figures.fdsAfter = fdCount(database);
    await receiver.close();
    await store.close();
    await dir.remove();
    figures.seconds = Math.round((performance.now() - started) / 100) / 10;
  }
  return figures;
}

function describeAttempts(attempts: AttemptRecord[], requests: ChaosRequest[]): string {
  return attempts
    .map(
      (a, i) =>
        `${a.status_code ?? a.error?.split(':')[0]}(${(requests[i]?.behaviour as Behaviour | undefined) ?? '?'})`,
    )
    .join(' ');
}

/** What is wrong with a chaos run; empty when every promise held. */
export function chaosProblems(f: ChaosFigures): string[] {
  const problems: string[] = [];
  if (f.notFinal.length > 0)
    problems.push(`${f.notFinal.length} callbacks not final: ${f.notFinal.slice(0, 3).join(', ')}`);
  if (f.attemptMismatches.length > 0) {
    problems.push(
      `${f.attemptMismatches.length} callbacks whose attempts differ from the requests seen: ${f.attemptMismatches.slice(0, 3).join(', ')}`,
    );
  }
  if (f.wrongFinalState.length > 0)
    problems.push(`wrong final states: ${f.wrongFinalState.slice(0, 3).join(' | ')}`);
  if (f.receiverRequests !== f.attemptsRecorded)
    problems.push(`${f.receiverRequests} requests, ${f.attemptsRecorded} attempts recorded`);
  if (f.inflightAfter !== 0) problems.push(`${f.inflightAfter} worker slots still taken`);
  if (f.fdsAfter > f.fdsBefore) problems.push(`${f.fdsAfter - f.fdsBefore} file descriptors left open`);
  if (f.workerErrors.length > 0) problems.push(`worker errors: ${f.workerErrors.slice(0, 3).join(' | ')}`);
  return problems;
}
