import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { DirectoryBlobStore } from '../delivery/index.ts';
import { wakeableDelay } from '../delivery/wakeable-delay.ts';
import type { OperationOutcome, OperationRecord, OperationStore, WorkStore } from '../store/index.ts';
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
  blobs: DirectoryBlobStore;
  generator: Generator;
  /** Scratch space for generators; each operation gets its own folder, removed afterwards. */
  workDir: string;
  workerId?: string | undefined;
  /** Generations at once (2). */
  concurrency?: number | undefined;
  /** Lease on a running operation; renewed while it runs (60 s). */
  leaseMs?: number | undefined;
  /** Told when an operation finishes. */
  onFinished?:
    | ((event: { id_gen: string; state: 'succeeded' | 'failed'; ms: number; error?: string }) => void)
    | undefined;
  onError?: ((error: unknown) => void) | undefined;
}

/**
 * Runs queued operations: claims one under a lease, generates, keeps the file in the blob
 * store and finishes the operation, which enqueues its callback in the same transaction. A
 * generator failure (or `fail_with`) becomes an error callback with the failure's text. A
 * worker that dies mid-generation loses its lease; the operation is then taken again.
 *
 * @example
 * const worker = new GenerationWorker({ store, blobs, generator: builtInGenerator(), workDir: '/tmp/mh' });
 * await worker.start();
 */
export class GenerationWorker {
  readonly workerId: string;
  readonly #options: GenerationWorkerOptions;
  readonly #inflight = new Set<Promise<void>>();
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
          operation = await this.#options.store.claimOperation(this.workerId, leaseMs);
        } catch (error) {
          this.#options.onError?.(error);
        }
      }
      if (operation) {
        const job = this.#generate(operation, leaseMs).catch((error: unknown) =>
          this.#options.onError?.(error),
        );
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
    const next = await this.#options.store.nextDueAt('operation').catch(() => null);
    // A stop or new work that came while the store was asked found no sleeper to wake: without
    // this, the loop would sleep on, up to a minute, and a stop would wait for it.
    if (this.#poked || !this.#running) return;
    const delay = next === null ? 60_000 : Math.max(50, Math.min(60_000, next - Date.now()));
    await wakeableDelay(delay, (wake) => (this.#wake = wake));
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
    const { store, blobs, generator } = this.#options;
    const started = performance.now();
    const renew = setInterval(() => {
      store.renewOperationLease(operation.id_gen, this.workerId, leaseMs).catch(() => {});
    }, leaseMs / 3);
    renew.unref();
    let workDir: string | undefined;
    try {
      let outcome: OperationOutcome;
      try {
        await mkdir(this.#options.workDir, { recursive: true, mode: 0o700 });
        workDir = await mkdtemp(join(this.#options.workDir, WORK_DIR_PREFIX));
        const media = await generator.generate(
          {
            id_gen: operation.id_gen,
            kind: operation.kind,
            family: operation.family,
            prompt: operation.prompt,
            fail_with: operation.fail_with,
          },
          { workDir, signal: this.#abort.signal },
        );
        const key = await blobs.putFile(operation.id_gen, media.path, media.mediaType);
        outcome = { state: 'succeeded', result: { key, media_type: media.mediaType, bytes: media.bytes } };
      } catch (error) {
        if (this.#abort.signal.aborted) return; // stopping: the released lease lets it run again
        let message: string;
        if (isGenerationError(error)) message = error.message;
        else {
          // A fault of the service's own (a full disk, a folder it cannot write) names local
          // paths: the client gets a plain sentence, the log gets the details.
          this.#options.onError?.(error);
          message = 'the service could not complete the generation';
        }
        // A program's stderr may hold NUL, which the store refuses: the operation would never finish.
        outcome = { state: 'failed', message: message.replaceAll('\u0000', '\uFFFD') };
      }
      await store.finishOperation(operation.id_gen, outcome);
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
      if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
    }
  }
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
