import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { blobKeyOf, type BlobStore } from '../delivery/index.ts';
import { HeldLeases } from '../delivery/held-leases.ts';
import { wakeableDelay } from '../delivery/wakeable-delay.ts';
import { DEFAULT_FAULT_RETRY_FOR_MS, nextFaultTry, unavailableFailure } from '../faults/dependency-fault.ts';
import type {
  FaultInput,
  OperationOutcome,
  OperationRecord,
  OperationStore,
  WorkStore,
} from '../store/index.ts';
import { type Generator, isGenerationError } from './generators/index.ts';

/**
 * Each operation's scratch folder is named after the process that made it
 * (`op-<host>-<pid>-<token>-XXXXXX`), so that a process starting later on the same host can tell
 * the folders of a process that died (SIGKILL, a crash, a power cut) from those of one still
 * running, even on a data directory several processes share. The token tells this process
 * from an earlier one that had the same pid (a container's pid 1).
 */
const HOST =
  hostname()
    .replace(/[^A-Za-z0-9]/g, '_')
    .slice(0, 64) || 'host';
const PROCESS_TOKEN = randomBytes(4).toString('hex');
const WORK_DIR_PREFIX = `op-${HOST}-${process.pid}-${PROCESS_TOKEN}-`;
const WORK_DIR_NAME = /^op-([A-Za-z0-9_]+)-(\d+)-([0-9a-f]{8})-/;

interface GenerationWorkerOptions {
  /** The operations it claims and finishes, and the wake-ups and due times it waits on. */
  store: OperationStore & WorkStore;
  blobs: BlobStore;
  generator: Generator;
  /** Scratch space for generators; each operation gets its own folder, removed afterwards. */
  workDir: string;
  workerId?: string | undefined;
  /** Generations at once (2). */
  concurrency?: number | undefined;
  /** Lease on a running operation; renewed while it runs (60 s). */
  leaseMs?: number | undefined;
  /** How long a fault of the service's own may hold an operation up before it fails (24 h). */
  faultRetryForMs?: number | undefined;
  /** Told when an operation finishes. */
  onFinished?:
    | ((event: { id_gen: string; state: 'succeeded' | 'failed'; ms: number; error?: string }) => void)
    | undefined;
  /** Told when a fault gives an operation back for later. */
  onDeferred?: ((event: { id_gen: string; fault: FaultInput }) => void) | undefined;
  onError?: ((error: unknown) => void) | undefined;
}

/** Generation errors that are the generator's verdict on its input: they fail the operation. */
const VERDICTS = new Set(['failed_on_request', 'generation_failed', 'generator_timeout', 'bad_output']);

/**
 * Runs queued operations: claims one under a lease, generates, keeps the file in the blob
 * store and finishes the operation, which enqueues its callback in the same transaction. The
 * generator's verdict on its input (`fail_with`, a refused prompt, a program's non-zero exit)
 * becomes an error callback with its text. Anything else is a fault of the service's own (a
 * generator that cannot start, a full disk, a blob store that is down): the operation is given
 * back and tried again after a pause doubling from 1 s to 1 min, failing only once the fault
 * has lasted `faultRetryForMs`. A worker that dies mid-generation loses its lease; the
 * operation is then taken again.
 *
 * @example
 * const worker = new GenerationWorker({ store, blobs, generator: builtInGenerator(), workDir: '/tmp/mh' });
 * await worker.start();
 */
export class GenerationWorker {
  readonly workerId: string;
  readonly #options: GenerationWorkerOptions;
  readonly #inflight = new Set<Promise<void>>();
  /** The operations this worker is generating. */
  readonly #held = new HeldLeases();
  readonly #abort = new AbortController();
  #running = false;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  /** A wake-up that came while the loop was not asleep: its next sleep returns at once. */
  #poked = false;
  #unsubscribe: (() => void) | null = null;

  constructor(options: GenerationWorkerOptions) {
    this.#options = options;
    this.workerId = options.workerId ?? `generation-${randomUUID()}`;
  }

  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    const subscription = this.#options.store.onWork((event) => {
      if (event.kind === 'operation') this.#poke();
    });
    this.#unsubscribe = subscription;
    await subscription.ready;
    await this.#removeStaleWorkDirs();
    this.#loop = this.#run();
  }

  /** Removes what dead processes on this host left in the scratch space, which can be large. */
  async #removeStaleWorkDirs(): Promise<void> {
    const names = await readdir(this.#options.workDir).catch(() => [] as string[]);
    for (const name of names) {
      const owner = WORK_DIR_NAME.exec(name);
      if (!owner || owner[1] !== HOST) continue;
      const pid = Number(owner[2]);
      const stale = pid === process.pid ? owner[3] !== PROCESS_TOKEN : !isRunning(pid);
      if (!stale) continue;
      await rm(join(this.#options.workDir, name), { recursive: true, force: true }).catch((error: unknown) =>
        this.#options.onError?.(error),
      );
    }
  }

  /** Stops taking operations; those running are given up to `graceMs`, then aborted and released. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    this.#unsubscribe?.();
    this.#poke();
    await this.#loop;
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([Promise.all(this.#inflight), timeout]);
    this.#abort.abort(new Error('the service is stopping'));
    await Promise.all(this.#inflight);
    await this.#options.store.releaseLeases(this.workerId);
  }

  async #run(): Promise<void> {
    const concurrency = this.#options.concurrency ?? 2;
    const leaseMs = this.#options.leaseMs ?? 60_000;
    while (this.#running) {
      // Wake-ups from here on count: one during the claim or the look at what is due next means
      // there may be work this round did not see.
      this.#poked = false;
      let operation: OperationRecord | undefined;
      if (this.#inflight.size < concurrency) {
        try {
          await this.#held.giveBackUnknown(this.#options.store, this.workerId);
          operation = await this.#options.store.claimOperation(this.workerId, leaseMs);
        } catch (error) {
          this.#options.onError?.(error);
          this.#held.mayHoldUnknown();
          // The store is down: look again shortly, not at the next wake-up it cannot send.
          await this.#pause(1_000);
          continue;
        }
      }
      if (operation) {
        const job = this.#generate(operation, leaseMs).catch((error: unknown) => {
          this.#options.onError?.(error);
          // Still leased here, unfinished (a fault the store could not take back): given back
          // once the store answers again.
          this.#held.mayHoldUnknown();
        });
        this.#inflight.add(job);
        void job.finally(() => {
          this.#inflight.delete(job);
          this.#poke();
        });
        continue;
      }
      await this.#sleep();
    }
  }

  async #sleep(): Promise<void> {
    // A store that cannot say (it is down) is asked again in a second.
    const next = await this.#options.store.nextDueAt('operation').catch(() => Date.now() + 1_000);
    // A stop or new work that came while the store was asked found no sleeper to wake: without
    // this, the loop would sleep on, up to a minute, and a stop would wait for it.
    if (this.#poked || !this.#running) return;
    await this.#pause(next === null ? 60_000 : Math.max(50, Math.min(60_000, next - Date.now())));
  }

  /** Waits `ms`, or less when poked. */
  async #pause(ms: number): Promise<void> {
    await wakeableDelay(ms, (wake) => (this.#wake = wake));
    this.#wake = null;
  }

  /** Wakes the loop if it sleeps, else makes its next sleep return at once. */
  #poke(): void {
    const wake = this.#wake;
    if (wake) {
      this.#wake = null;
      wake();
    } else this.#poked = true;
  }

  async #generate(operation: OperationRecord, leaseMs: number): Promise<void> {
    const { store } = this.#options;
    const started = performance.now();
    this.#held.hold(operation.id_gen);
    const renew = setInterval(() => {
      store.renewOperationLease(operation.id_gen, this.workerId, leaseMs).catch(() => {});
    }, leaseMs / 3);
    renew.unref();
    const scratch: { dir?: string } = {};
    try {
      let outcome: OperationOutcome;
      try {
        outcome = await this.#outcomeOf(operation, scratch);
      } catch (error) {
        if (this.#abort.signal.aborted) return; // stopping: the released lease lets it run again
        // A fault of the service's own: the details go to the log, the operation shows a sentence.
        this.#options.onError?.(error);
        const fault = faultTextOf(error);
        const next = nextFaultTry(
          operation.fault?.since ?? null,
          Date.now(),
          this.#options.faultRetryForMs ?? DEFAULT_FAULT_RETRY_FOR_MS,
          fault,
        );
        if (next) return await this.#defer(operation.id_gen, next);
        outcome = { state: 'failed', message: unavailableFailure(fault) };
      }
      await this.#finish(operation.id_gen, outcome);
      this.#options.onFinished?.({
        id_gen: operation.id_gen,
        state: outcome.state,
        ms: performance.now() - started,
        ...(outcome.state === 'failed' ? { error: outcome.message } : {}),
      });
    } finally {
      // Cleared on every path: a lease renewed after a failure would hold the operation
      // `running` for good.
      clearInterval(renew);
      this.#held.drop(operation.id_gen);
      if (scratch.dir !== undefined) await rm(scratch.dir, { recursive: true, force: true });
    }
  }

  /** Generates and keeps the file; the generator's verdict is a failed outcome, anything else throws. */
  async #outcomeOf(operation: OperationRecord, scratch: { dir?: string }): Promise<OperationOutcome> {
    const { blobs, generator } = this.#options;
    try {
      await mkdir(this.#options.workDir, { recursive: true, mode: 0o700 });
      scratch.dir = await mkdtemp(join(this.#options.workDir, WORK_DIR_PREFIX));
    } catch (error) {
      throw new Error('the scratch space could not be written', { cause: error });
    }
    let media;
    try {
      media = await generator.generate(
        {
          id_gen: operation.id_gen,
          kind: operation.kind,
          family: operation.family,
          prompt: operation.prompt,
          fail_with: operation.fail_with,
        },
        { workDir: scratch.dir, signal: this.#abort.signal },
      );
    } catch (error) {
      if (!isGenerationError(error) || !VERDICTS.has(error.code)) throw error;
      // A program's stderr may hold NUL, which the store refuses: the operation would never finish.
      return { state: 'failed', message: error.message.replaceAll('\u0000', '\uFFFD') };
    }
    const key = blobKeyOf(operation.id_gen, media.mediaType);
    await blobs.putFile(key, media.path).catch((error: unknown) => {
      throw new Error('the result could not be kept in the blob store', { cause: error });
    });
    return { state: 'succeeded', result: { key, media_type: media.mediaType, bytes: media.bytes } };
  }

  /**
   * Records the outcome, trying again a few times (1, 2, 4, 8 s) while the store is down: the
   * work is done, and the lease, renewed meanwhile, keeps it this worker's. Past that the lease
   * runs out and the operation is taken again.
   */
  async #finish(idGen: string, outcome: OperationOutcome): Promise<void> {
    for (let pause = 1_000; ; pause *= 2) {
      try {
        await this.#options.store.finishOperation(idGen, outcome);
        return;
      } catch (error) {
        if (pause > 8_000 || this.#abort.signal.aborted) throw error;
        this.#options.onError?.(error);
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }

  /** Gives the operation back until the fault's next try; a store that is down lets the lease run out. */
  async #defer(idGen: string, fault: FaultInput): Promise<void> {
    await this.#options.store.deferOperation(idGen, this.workerId, fault);
    this.#options.onDeferred?.({ id_gen: idGen, fault });
  }
}

/** What the operation shows of a fault: a sentence naming the part that failed, no local path. */
function faultTextOf(error: unknown): string {
  if (isGenerationError(error)) return error.message;
  const wrapped = error instanceof Error && error.cause !== undefined;
  const what = wrapped ? error.message : 'the generation could not be run';
  const code = ((wrapped ? error.cause : error) as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? `${what} (${code})` : what;
}

/** Whether a process with this id exists (EPERM: it does, under another user). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
