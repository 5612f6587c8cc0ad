/**
 * What a worker holds under lease, as the worker knows it: the work it is doing, and whether
 * it may hold more without knowing. A claim committed just as its connection was cut (or work
 * dropped with an error while the store could not take it back) stays leased to the worker
 * until the lease runs out, 10 minutes for a delivery; this gives it back as soon as the store
 * answers again.
 */
import type { WorkStore } from '../store/index.ts';

export class HeldLeases {
  /** The work this worker is doing, and work it keeps leased on purpose. */
  readonly #known = new Set<string>();
  #unknown = false;

  /** Work taken up, or kept leased until its lease runs out (an attempt it gave up recording). */
  hold(idGen: string): void {
    this.#known.add(idGen);
  }

  /** Work done with: its lease is the store's business again. */
  drop(idGen: string): void {
    this.#known.delete(idGen);
  }

  /** A round with the store failed, or work was dropped with its lease still held. */
  mayHoldUnknown(): void {
    this.#unknown = true;
  }

  /**
   * When it may hold work it does not know of: gives back every lease of `workerId` but those
   * it knows, and `alsoKeep`. Throws what the store throws; it is then tried again next time.
   */
  async giveBackUnknown(
    store: Pick<WorkStore, 'releaseLeases'>,
    workerId: string,
    alsoKeep: readonly string[] = [],
  ): Promise<void> {
    if (!this.#unknown) return;
    await store.releaseLeases(workerId, [...this.#known, ...alsoKeep]);
    this.#unknown = false;
  }
}
