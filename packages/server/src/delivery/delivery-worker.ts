import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { FileSource } from 'mediahook/protocol';
import {
  type CallbackRecord,
  type CircuitPolicy,
  type ClaimedCallback,
  DEFAULT_CIRCUIT_POLICY,
  FINAL_CALLBACK_STATES,
  isStoreError,
  type NextCallbackState,
  type OutboxStore,
  type Settlement,
  type WorkStore,
} from '../store/index.ts';
import { type BlobStore, idGenOfBlobKey } from './blobs/index.ts';
import { type AttemptResult, CANCELLED, type CallbackSender } from './callback-sender.ts';
import { outgoingCallbackOf, resultFileOf } from './outgoing-callback.ts';
import { DEFAULT_LEASE_MS, renewLeaseWhileSending } from './lease-renewal.ts';
import { ResultBuffers } from './result-buffers.ts';
import { wakeableDelay } from './wakeable-delay.ts';
import { DEFAULT_RETRY_POLICY, nextCallbackState, type RetryPolicy } from './retry-policy.ts';

const MIN_BLOCKED_POLL_MS = 50;

/**
 * Rounds an attempt may fail to be recorded in before it is given up: its callback then stays
 * leased and is taken over, and sent again, once the lease runs out.
 */
const MAX_RECORD_TRIES = 5;

/** The error of an attempt not sent because its client's secret could not be read. */
const SIGNING_UNAVAILABLE = 'signing_unavailable';

/** An attempt that ends before anything is sent. */
function unsentAttempt(error: string, verdict: 'refused' | 'retry'): AttemptResult {
  return {
    at: new Date().toISOString(),
    duration_ms: 0,
    status_code: null,
    error,
    response_head: null,
    request_headers: null,
    response_headers: null,
    verdict,
    retry_after_ms: null,
  };
}

export interface DeliveryWorkerOptions {
  /** The outbox it drains, and the wake-ups and due times it waits on. */
  store: OutboxStore & WorkStore;
  blobs: BlobStore;
  sender: CallbackSender;
  /**
   * The secrets that sign a callback of `client`'s operation, in the order of their signatures;
   * absent: the sender's own.
   */
  signingSecrets?: ((client: string) => Promise<readonly string[]>) | undefined;
  /** Unique per process; leases are held in its name. */
  workerId?: string | undefined;
  /** Callbacks in flight at once (16). */
  concurrency?: number | undefined;
  /** Callbacks of one receiver in flight at once (4), so one slow receiver cannot take every slot. */
  perEndpointLimit?: number | undefined;
  /** How long a claim holds a callback before another worker may take it over (10 min). */
  leaseMs?: number | undefined;
  retry?: RetryPolicy | undefined;
  circuit?: CircuitPolicy | undefined;
  /** How long result files are kept once their callback is final (24 h). */
  retentionMs?: number | undefined;
  /** Told of each attempt (metrics, logs). */
  onAttempt?:
    | ((event: { id_gen: string; endpoint: string; attempt: AttemptResult; next: NextCallbackState }) => void)
    | undefined;
  /** Told of a failure of the worker itself (a store error); the worker carries on. */
  onError?: ((error: unknown) => void) | undefined;
}

/** An attempt that ended, waiting for the loop's next round to record it. */
interface Finished {
  settlement: Settlement;
  endpoint: string;
  attempt: AttemptResult;
  /** Rounds that failed to record it. */
  failures: number;
}

/**
 * Delivers the outbox: claims due callbacks under a lease, sends each with the
 * {@link CallbackSender}, records every attempt and moves the callback on (delivered, gone,
 * retrying on the schedule, dead). Bounded in flight overall and per receiver; a receiver that
 * keeps failing has its circuit opened, so its callbacks wait instead of taking slots.
 *
 * @example
 * const worker = new DeliveryWorker({ store, blobs, sender: new CallbackSender() });
 * worker.start();
 * process.on('SIGTERM', () => worker.stop());
 */
export class DeliveryWorker {
  readonly workerId: string;
  readonly #options: DeliveryWorkerOptions;
  readonly #inflight = new Set<Promise<void>>();
  /** Result files sent from memory are read into these, reused per receiver. */
  readonly #buffers = new ResultBuffers();
  /** Attempts that ended and are not written yet: the next round of the loop settles them. */
  #finished: Finished[] = [];
  #running = false;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  /** A wake-up came while the loop was not asleep (claiming, or asking when work is due). */
  #poked = false;
  /** How long to wait before looking again at due work the last claims could not take. */
  #blockedPollMs = MIN_BLOCKED_POLL_MS;
  #unsubscribe: (() => void) | null = null;
  #sweeper: NodeJS.Timeout | null = null;
  /** Aborted when a stop's grace period is over: the requests still open are ended. */
  #cancel = new AbortController();

  constructor(options: DeliveryWorkerOptions) {
    this.#options = options;
    this.workerId = options.workerId ?? `delivery-${randomUUID()}`;
  }

  /** Starts claiming and delivering; resolves once wake-ups are being received. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    this.#cancel = new AbortController();
    // Every send in flight listens for the cancel: as many listeners as slots is no leak.
    setMaxListeners(this.#concurrency + 1, this.#cancel.signal);
    const subscription = this.#options.store.onWork((event) => {
      if (event.kind === 'callback') this.#poke();
    });
    this.#unsubscribe = subscription;
    await subscription.ready;
    this.#loop = this.#run();
    this.#sweeper = setInterval(() => {
      this.sweepResults().catch((error: unknown) => this.#options.onError?.(error));
    }, 10 * 60_000);
    this.#sweeper.unref();
  }

  /**
   * Stops claiming, waits up to `graceMs` for deliveries in flight, then ends the requests still
   * open (each recorded as a cancelled attempt, due again at once) and gives back every lease
   * still held, so another worker (or the next start) takes them at once. Ending the requests
   * first means no other worker sends a callback while this one's request for it is still open.
   */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#poke();
    this.#unsubscribe?.();
    await this.#loop;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([Promise.all(this.#inflight), timeout]);
    clearTimeout(timer);
    this.#cancel.abort();
    await Promise.all(this.#inflight);
    // What ended since the loop stopped is recorded before the leases go back.
    if (this.#finished.length > 0) {
      await this.#settle(this.#finished.splice(0), 0).catch((error: unknown) =>
        this.#options.onError?.(error),
      );
    }
    await this.#options.store.releaseLeases(this.workerId);
  }

  /**
   * Removes the result files of callbacks that are final (delivered, gone, dead) since longer
   * than the retention period. A redelivery after that ends dead with `result_missing`.
   * Returns how many files were removed.
   */
  async sweepResults(now = Date.now()): Promise<number> {
    const { store, blobs } = this.#options;
    const retention = this.#options.retentionMs ?? 24 * 3_600_000;
    let removed = 0;
    for await (const key of blobs.keys()) {
      const callback = await store.getCallback(idGenOfBlobKey(key));
      if (!callback || !FINAL_CALLBACK_STATES.includes(callback.state)) continue;
      if ((callback.finished_at ?? now) + retention > now) continue;
      await blobs.remove(key);
      removed++;
    }
    return removed;
  }

  /** Deliveries in flight now. */
  get inflight(): number {
    return this.#inflight.size;
  }

  get #leaseMs(): number {
    return this.#options.leaseMs ?? DEFAULT_LEASE_MS;
  }

  get #concurrency(): number {
    return this.#options.concurrency ?? 16;
  }

  /**
   * One round after another: record the attempts that ended (and their receivers' circuits)
   * and claim what the free slots can take, in one transaction. Deliveries that end while a
   * round runs, or in the same turn of the event loop (the wake-up waits for it), share the next
   * one: the busier the worker, the more each transaction carries.
   */
  async #run(): Promise<void> {
    while (this.#running) {
      // Whatever is announced from here on may have been missed by this claim: look again.
      this.#poked = false;
      const claimedAt = Date.now();
      const free = this.#concurrency - this.#inflight.size;
      const finished = this.#finished.splice(0);
      let claimed: ClaimedCallback[] = [];
      if (free > 0 || finished.length > 0) {
        try {
          claimed = await this.#settle(finished, free);
        } catch (error) {
          this.#options.onError?.(error);
          await this.#settleAlone(finished);
          // After a pause, so that a store that is down is not asked in a loop.
          await this.#pause(this.#nextBlockedPoll());
          continue;
        }
      }
      for (const item of claimed) this.#start(item);
      if (claimed.length > 0) this.#blockedPollMs = MIN_BLOCKED_POLL_MS;
      if (claimed.length === free && free > 0) continue; // there may be more due right now
      await this.#sleep(claimedAt);
    }
  }

  /** Writes the ended attempts and claims up to `limit` more; tells of each attempt written. */
  async #settle(finished: Finished[], limit: number): Promise<ClaimedCallback[]> {
    const result = await this.#options.store.settleCallbacks(
      this.workerId,
      finished.map((f) => f.settlement),
      {
        circuit: this.#options.circuit ?? DEFAULT_CIRCUIT_POLICY,
        ...(limit > 0
          ? {
              claim: {
                limit,
                leaseMs: this.#leaseMs,
                perEndpointLimit: this.#options.perEndpointLimit ?? 4,
              },
            }
          : {}),
      },
    );
    result.settled.forEach((record, i) => {
      const { settlement, endpoint, attempt } = finished[i]!;
      // Not written (the lease was lost to another worker): that worker's attempt counts.
      if (isStoreError(record)) this.#options.onError?.(record);
      else this.#options.onAttempt?.({ id_gen: settlement.id_gen, endpoint, attempt, next: settlement.next });
    });
    return result.claimed;
  }

  /**
   * Nothing of a failed round was written. Its attempts are tried one by one, so that one the
   * store keeps refusing cannot hold up the others (nor, as it shares their round, every claim);
   * those still not written go with the next round, up to MAX_RECORD_TRIES.
   */
  async #settleAlone(finished: Finished[]): Promise<void> {
    for (const item of finished) {
      try {
        await this.#settle([item], 0);
      } catch (error) {
        if (++item.failures < MAX_RECORD_TRIES) this.#finished.push(item);
        else {
          this.#options.onError?.(
            new Error(`gave up recording an attempt of ${item.settlement.id_gen}: ${String(error)}`, {
              cause: error,
            }),
          );
        }
      }
    }
  }

  #start(item: ClaimedCallback): void {
    const delivery = this.#deliver(item).catch((error: unknown) => this.#options.onError?.(error));
    this.#inflight.add(delivery);
    void delivery.finally(() => {
      this.#inflight.delete(delivery);
      this.#poke();
    });
  }

  /**
   * Wakes the loop if it sleeps, else makes its next sleep return at once. The loop runs after
   * the current turn of the event loop, so that every delivery ending in this turn is settled
   * by the same round.
   */
  #poke(): void {
    const wake = this.#wake;
    if (wake) {
      this.#wake = null;
      setImmediate(wake);
    } else this.#poked = true;
  }

  /** The pause before looking again at work that stays blocked: doubling, up to a second. */
  #nextBlockedPoll(): number {
    const wait = this.#blockedPollMs;
    this.#blockedPollMs = Math.min(1_000, this.#blockedPollMs * 2);
    return wait;
  }

  /** Waits `ms`, or less when poked. */
  async #pause(ms: number): Promise<void> {
    if (this.#poked || !this.#running) return;
    await wakeableDelay(ms, (wake) => (this.#wake = wake));
    this.#wake = null;
  }

  /**
   * Waits for a wake-up, a finished delivery, or the next due time. Work that was already due
   * when the last claim began, yet was not taken, is blocked (its receiver is at its cap, or
   * another worker's claim had it locked): asking again at once would spin on the store, and on
   * SQLite, whose calls never yield to I/O, starve the very deliveries that would free a slot.
   * So it is looked at again after a pause that doubles while it stays blocked.
   */
  async #sleep(claimedAt: number): Promise<void> {
    // With every slot busy only a finished delivery (which pokes) can let work be taken: asking
    // the store when work is due would cost a query per delivery for nothing.
    const full = this.#inflight.size >= this.#concurrency;
    const next = full ? null : await this.#options.store.nextDueAt('callback').catch(() => null);
    const delay = next === null ? 60_000 : Math.max(0, Math.min(60_000, next - Date.now()));
    // A wake-up during the claim or the query above would otherwise be lost for up to a minute.
    if (this.#poked || !this.#running) return;
    const blocked = next !== null && next <= claimedAt;
    if (!blocked) this.#blockedPollMs = MIN_BLOCKED_POLL_MS;
    if (delay === 0 && !blocked && !full) return;
    await this.#pause(blocked ? this.#nextBlockedPoll() : delay || 1_000);
  }

  /** Sends one claimed callback and queues its attempt for the next round to record. */
  async #deliver({ callback, operation }: ClaimedCallback): Promise<void> {
    const { blobs, sender } = this.#options;
    let file: FileSource | null = null;
    if (operation.state === 'succeeded' && operation.result) {
      file = await resultFileOf(blobs, operation.result, (size) =>
        this.#buffers.take(callback.endpoint_key, size),
      );
      if (file === null) {
        const attempt = unsentAttempt('result_missing: the result file is no longer kept', 'refused');
        this.#finish(callback, attempt, { state: 'dead' }, null);
        return;
      }
    }
    const cancel = this.#cancel.signal;
    const lost = new AbortController();
    const renewal = renewLeaseWhileSending({
      store: this.#options.store,
      idGen: callback.id_gen,
      workerId: this.workerId,
      leaseMs: this.#leaseMs,
      lost,
      onError: this.#options.onError,
    });
    let attempt: AttemptResult;
    try {
      const secrets = await this.#options.signingSecrets?.(operation.client).catch((error: unknown) => error);
      attempt =
        secrets instanceof Error
          ? unsentAttempt(`${SIGNING_UNAVAILABLE}: ${secrets.message}`, 'retry')
          : await sender.send(
              operation.webhook_url,
              outgoingCallbackOf(operation, file),
              AbortSignal.any([cancel, lost.signal]),
              secrets as readonly string[] | undefined,
            );
    } finally {
      clearInterval(renewal);
      if (file instanceof Uint8Array) this.#buffers.give(callback.endpoint_key, file);
    }
    if (cancel.aborted && attempt.error?.startsWith(CANCELLED)) {
      // Ended by stop(), not by the receiver: no mark against it, and due again at once.
      const next = { state: 'retrying', next_attempt_at: Date.now(), advances_schedule: false } as const;
      this.#finish(callback, attempt, next, null);
      return;
    }
    // Not sent for want of a secret: no mark against the receiver either.
    const circuit =
      attempt.verdict === 'refused' || attempt.error?.startsWith(SIGNING_UNAVAILABLE)
        ? null
        : attempt.verdict === 'retry'
          ? 'failed'
          : 'answered';
    const policy = this.#options.retry ?? DEFAULT_RETRY_POLICY;
    this.#finish(
      callback,
      attempt,
      nextCallbackState(policy, callback.round_attempt_count, attempt),
      circuit,
    );
  }

  #finish(
    callback: CallbackRecord,
    attempt: AttemptResult,
    next: NextCallbackState,
    circuit: Settlement['circuit'],
  ): void {
    this.#finished.push({
      endpoint: callback.endpoint_key,
      attempt,
      failures: 0,
      settlement: {
        id_gen: callback.id_gen,
        attempt: {
          at: Date.parse(attempt.at),
          duration_ms: attempt.duration_ms,
          status_code: attempt.status_code,
          error: attempt.error,
          response_head: attempt.response_head,
          request_headers: attempt.request_headers,
          response_headers: attempt.response_headers,
        },
        next,
        circuit,
      },
    });
  }
}
