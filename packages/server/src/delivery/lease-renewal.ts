import type { Store } from '../store/index.ts';

/** How long a claim holds a callback before another worker may take it over. */
export const DEFAULT_LEASE_MS = 10 * 60_000;

interface LeaseRenewal {
  store: Pick<Store, 'renewCallbackLease'>;
  idGen: string;
  workerId: string;
  leaseMs: number;
  /** Aborted when the lease turns out to be held by another worker now. */
  lost: AbortController;
  /** Told of a renewal the store failed to make; the next one may succeed. */
  onError?: ((error: unknown) => void) | undefined;
}

/**
 * Renews a callback's lease every third of it while its request is open: a send may last
 * longer than the lease (a receiver slow within every timeout), and a lapsed lease would let a
 * claim, this worker's own included, send the callback again beside it. Should the lease be
 * lost all the same (the store out of reach for a whole lease), `lost` ends the request: the
 * worker that holds the callback now sends it. Clear the returned timer once the send ends.
 *
 * @example
 * const timer = renewLeaseWhileSending({ store, idGen, workerId, leaseMs, lost });
 * try { await send(lost.signal); } finally { clearInterval(timer); }
 */
export function renewLeaseWhileSending(renewal: LeaseRenewal): NodeJS.Timeout {
  const { store, idGen, workerId, leaseMs, lost, onError } = renewal;
  const timer = setInterval(() => {
    store.renewCallbackLease(idGen, workerId, leaseMs).then(
      (held) => {
        if (!held) lost.abort();
      },
      (error: unknown) => onError?.(error),
    );
  }, leaseMs / 3);
  timer.unref();
  return timer;
}
