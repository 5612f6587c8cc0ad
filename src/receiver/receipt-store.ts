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
 * Where a receiver keeps its receipts, keyed by `id_gen`. Must survive restarts to make
 * redeliveries idempotent; {@link MemoryReceiptStore} is for tests and throwaway receivers.
 */
export interface ReceiptStore {
  get(idGen: string): Promise<Receipt | undefined>;
  /** Records a receipt; resolves false, changing nothing, when `id_gen` is already recorded. */
  add(receipt: Receipt): Promise<boolean>;
  /** The newest receipts first. */
  list(options?: { limit?: number }): Promise<Receipt[]>;
  close(): Promise<void>;
}

/** Receipts in memory: lost on exit. */
export class MemoryReceiptStore implements ReceiptStore {
  readonly #receipts = new Map<string, Receipt>();

  async get(idGen: string): Promise<Receipt | undefined> {
    return this.#receipts.get(idGen);
  }

  async add(receipt: Receipt): Promise<boolean> {
    if (this.#receipts.has(receipt.id_gen)) return false;
    this.#receipts.set(receipt.id_gen, { ...receipt });
    return true;
  }

  async list(options: { limit?: number } = {}): Promise<Receipt[]> {
    return [...this.#receipts.values()].reverse().slice(0, options.limit ?? 100);
  }

  async close(): Promise<void> {}
}
