import { randomUUID } from 'node:crypto';
import { emitWarning } from 'node:process';
import { hasClaims, type Receipt, type ReceiptClaims, type ReceiptStore } from './receipt-store.ts';
import { ReceiverError } from './receiver-error.ts';

/** How a receiver claims the callbacks it handles in a store shared with other processes. */
interface ClaimSettings {
  /** This receiver, as the holder of its claims. */
  readonly holder: string;
  /** How long a claim lasts without renewal: how soon a dead holder's claim can be taken over. */
  ttlMs: number;
  /** How long a copy waits for another holder's claim before it is answered `in_progress`. */
  waitMs: number;
}

const DEFAULT_CLAIM_TTL_MS = 30_000;
const DEFAULT_CLAIM_WAIT_MS = 30_000;

// A copy that lost the race polls the store: soon at first (most handlers are quick), then
// less often, so a long handler elsewhere costs a few statements a second per waiting copy.
const FIRST_POLL_MS = 20;
const LAST_POLL_MS = 200;

export function claimSettingsOf(options: {
  claimTtlMs?: number | undefined;
  claimWaitMs?: number | undefined;
}): ClaimSettings {
  const ttlMs = options.claimTtlMs ?? DEFAULT_CLAIM_TTL_MS;
  const waitMs = options.claimWaitMs ?? DEFAULT_CLAIM_WAIT_MS;
  if (!(ttlMs > 0) || !Number.isFinite(ttlMs)) throw new TypeError('claimTtlMs must be a positive number');
  if (!(waitMs >= 0) || !Number.isFinite(waitMs)) throw new TypeError('claimWaitMs must be 0 or more');
  // Random per receiver: two receivers, even in one process, never take each other's claims.
  // Drawn on first use: a Worker may not draw random values while its module loads.
  let holder: string | undefined;
  return {
    get holder() {
      return (holder ??= randomUUID());
    },
    ttlMs,
    waitMs,
  };
}

/**
 * Runs `work` (the handler and the receipt) while holding the claim on `idGen`, or answers the
 * receipt already recorded for it, or recorded meanwhile. A claim held elsewhere is waited for
 * until it is released, lapses, or ends in a receipt; the wait ends with `aborted` when the
 * request's `signal` fires (the sender is gone) and with `in_progress` after `waitMs`. While `work` runs the claim
 * is renewed every third of its lifetime; if `work` fails the claim is released, so that a
 * redelivery is handled as new. `work` must record the receipt, which drops the claim.
 *
 * With a store that has no claims, only the receipt is looked up before `work` runs: copies are
 * then kept apart only within one receiver, by its in-flight map.
 */
export async function underClaim<T>(
  store: ReceiptStore,
  idGen: string,
  settings: ClaimSettings,
  request: { readonly signal?: AbortSignal },
  work: () => Promise<T>,
): Promise<T | { duplicateOf: Receipt }> {
  if (!hasClaims(store)) {
    const existing = await store.get(idGen);
    return existing ? { duplicateOf: existing } : work();
  }
  // A claim is refused where a receipt exists, so the look-up below also finds the duplicates.
  const deadline = performance.now() + settings.waitMs;
  for (let pause = FIRST_POLL_MS; ; pause = Math.min(pause * 2, LAST_POLL_MS)) {
    if (await store.claim(idGen, settings.holder, settings.ttlMs)) break;
    const receipt = await store.get(idGen);
    if (receipt) return { duplicateOf: receipt };
    const left = deadline - performance.now();
    if (left <= 0) {
      throw new ReceiverError(
        'in_progress',
        `another receiver is still handling a copy of this callback after ${settings.waitMs} ms; send it again later`,
      );
    }
    await sleep(Math.min(pause, left), request.signal);
  }
  const stop = keepAlive(store, idGen, settings);
  try {
    return await work();
  } catch (error) {
    stop();
    try {
      await store.release(idGen, settings.holder);
    } catch {
      // The claim then lapses at its expiry; the sender is told the handler's failure, not
      // the store's.
    }
    throw error;
  } finally {
    stop();
  }
}

/**
 * Renews the claim on a timer, so that a handler slower than the claim's lifetime keeps it.
 * Returns what stops it; a renewal still under way then is ignored (the receipt or the release
 * has dropped the claim, and its refusal means nothing).
 */
function keepAlive(store: ReceiptClaims, idGen: string, settings: ClaimSettings): () => void {
  let stopped = false;
  const timer = setInterval(() => {
    // Called within a promise: a store that throws instead of rejecting must not crash the process.
    Promise.resolve()
      .then(() => store.renew(idGen, settings.holder, settings.ttlMs))
      .then(
        (held) => {
          if (held || stopped) return;
          clearInterval(timer);
          emitWarning(
            `the claim on callback ${idGen} lapsed while its handler ran (the event loop was blocked ` +
              'for longer than claimTtlMs?): another process may handle it too',
          );
        },
        // A renewal the store refused (busy) is tried again on the next tick, with two thirds of
        // the claim's lifetime still to go.
        () => undefined,
      );
  }, settings.ttlMs / 3);
  // A slow handler keeps the process alive by itself; its renewals need not. (Workers' timers
  // before 2026-02 are numbers.)
  timer.unref?.();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const aborted = () =>
      new ReceiverError(
        'aborted',
        'the sender went away while another copy of this callback was being handled',
      );
    if (signal?.aborted) {
      reject(aborted());
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(aborted());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
