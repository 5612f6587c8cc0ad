import type { CallbackEvent, Family, MediaType } from '../protocol/index.ts';

/** What a receiver remembers of an accepted callback: the idempotency record. */
export interface Receipt {
  id_gen: string;
  event: CallbackEvent;
  family: Family;
  status: string;
  time_gen: string;
  /** Error text of an error callback, else null. */
  message: string | null;
  /** Where the result file was stored, or null (error callback, or a custom sink). */
  file_path: string | null;
  media_type: MediaType | null;
  bytes: number | null;
  sha256: string | null;
  /** RFC 3339 time of acceptance. */
  received_at: string;
}

/**
 * Claims on callbacks being handled: what keeps two receivers that share a store (processes of
 * one cluster on one receipts directory) from handling copies of one callback at the same time. A
 * claim names its holder and lapses at its expiry, so a holder that died frees it by itself.
 */
export interface ReceiptClaims {
  /**
   * Takes the claim on `idGen` for `ttlMs` from now. True when `holder` now holds it: there was
   * no claim, an expired one, or its own; false when another holder's claim is in force or a
   * receipt for `idGen` is already recorded. Atomic across everything sharing the store.
   */
  claim(idGen: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Extends `holder`'s claim to `ttlMs` from now; false when it no longer holds it. */
  renew(idGen: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Drops `holder`'s claim, if it still holds it. */
  release(idGen: string, holder: string): Promise<void>;
}

/**
 * Where a receiver keeps its receipts, keyed by `id_gen`. Must survive restarts to make
 * redeliveries idempotent; {@link MemoryReceiptStore} is for tests and throwaway receivers.
 *
 * The claim methods are optional. A store that has them lets receivers in several processes
 * share it safely: a callback's handler runs in one of them at a time, and `add` drops the
 * callback's claim once the receipt is recorded, with no moment at which another process sees
 * neither. A store without them keeps copies arriving together apart within one receiver only.
 */
export interface ReceiptStore extends Partial<ReceiptClaims> {
  get(idGen: string): Promise<Receipt | undefined>;
  /**
   * Records a receipt (with claims: then drops the claim on its `id_gen`, whoever holds it);
   * resolves false, keeping the first receipt, when `id_gen` is already recorded.
   */
  add(receipt: Receipt): Promise<boolean>;
  /** The newest receipts first. */
  list(options?: { limit?: number }): Promise<Receipt[]>;
  close(): Promise<void>;
}

/** A store with all of the claim methods. */
export function hasClaims(store: ReceiptStore): store is ReceiptStore & ReceiptClaims {
  return (
    typeof store.claim === 'function' &&
    typeof store.renew === 'function' &&
    typeof store.release === 'function'
  );
}

/** Receipts in memory: lost on exit. Its claims hold among receivers sharing the one instance. */
export class MemoryReceiptStore implements ReceiptStore, ReceiptClaims {
  readonly #receipts = new Map<string, Receipt>();
  readonly #claims = new Map<string, { holder: string; expiresAt: number }>();

  async get(idGen: string): Promise<Receipt | undefined> {
    return this.#receipts.get(idGen);
  }

  async add(receipt: Receipt): Promise<boolean> {
    this.#claims.delete(receipt.id_gen);
    if (this.#receipts.has(receipt.id_gen)) return false;
    this.#receipts.set(receipt.id_gen, { ...receipt });
    return true;
  }

  async list(options: { limit?: number } = {}): Promise<Receipt[]> {
    return [...this.#receipts.values()].reverse().slice(0, options.limit ?? 100);
  }

  async claim(idGen: string, holder: string, ttlMs: number): Promise<boolean> {
    if (this.#receipts.has(idGen)) return false;
    const now = Date.now();
    const current = this.#claims.get(idGen);
    if (current && current.holder !== holder && current.expiresAt > now) return false;
    this.#claims.set(idGen, { holder, expiresAt: now + ttlMs });
    return true;
  }

  async renew(idGen: string, holder: string, ttlMs: number): Promise<boolean> {
    const current = this.#claims.get(idGen);
    if (current?.holder !== holder) return false;
    current.expiresAt = Date.now() + ttlMs;
    return true;
  }

  async release(idGen: string, holder: string): Promise<void> {
    if (this.#claims.get(idGen)?.holder === holder) this.#claims.delete(idGen);
  }

  async close(): Promise<void> {}
}
