import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync, type Stats } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { emitWarning } from 'node:process';
import { clearInterval, setInterval } from 'node:timers';
import type { Receipt, ReceiptClaims, ReceiptStore } from './receipt-store.ts';
import {
  mapBounded,
  namesIn,
  removeFile,
  removeQuietly,
  statOf,
  StoreFolders,
  textOf,
  uniqueName,
} from './store-files.ts';

/** The fields of a receipt, in the order they are written. */
const RECEIPT_FIELDS = [
  'id_gen',
  'event',
  'family',
  'status',
  'time_gen',
  'message',
  'file_path',
  'media_type',
  'bytes',
  'sha256',
  'received_at',
] as const satisfies readonly (keyof Receipt)[];

/** A receipt's or a claim's file name: the key of its id. */
const KEYED_NAME = /^[0-9a-f]{64}\.json$/;
const LOCK_NAME = /^([0-9a-f]{64})\.([0-9a-f]{32})\.\d+\.lock$/;

/** Leftovers older than this belong to no live process: as long as the disk sink waits. */
const STALE_MS = 60 * 60 * 1000;

/**
 * A takeover lock younger than this is its taker's, working: one older belongs to a taker that
 * died or stalled mid-takeover (at least a claim's lifetime, so a stall is one past its TTL).
 */
const MIN_LOCK_AGE_MS = 1000;

/** Stats and reads at once while listing: enough to keep the thread pool busy, not flooded. */
const LIST_WIDTH = 16;

/** A claim as read from its file. */
interface ClaimFile {
  holder: string;
  expiresAt: number;
  /** The digest of its bytes: which claim this is, unique since each carries a nonce. */
  instance: string;
}

type Takeover = 'taken' | 'busy' | 'changed';

/** The file-name key of an `id_gen`: never sender text, one name per id on any file system. */
function keyOf(idGen: string): string {
  return createHash('sha256').update(idGen, 'utf8').digest('hex');
}

function claimOf(text: string): ClaimFile {
  const instance = createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 32);
  try {
    const { holder, expires_at: expiresAt } = JSON.parse(text) as { holder: unknown; expires_at: unknown };
    if (typeof holder === 'string' && typeof expiresAt === 'number') return { holder, expiresAt, instance };
  } catch {
    // Below.
  }
  // Cut short by a power loss (no fsync per claim): nobody's, and expired.
  return { holder: '', expiresAt: -Infinity, instance };
}

function openOrNull(path: string): number | null {
  try {
    return openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function claimText(idGen: string, holder: string, ttlMs: number): string {
  return JSON.stringify({ id_gen: idGen, holder, expires_at: Date.now() + ttlMs, nonce: uniqueName() });
}

/** Microseconds since the epoch, increasing within the process: the order `list` gives. */
let lastStamp = 0;
function nextStamp(): number {
  lastStamp = Math.max(Math.floor((performance.timeOrigin + performance.now()) * 1000), lastStamp + 1);
  return lastStamp;
}

function receiptText(receipt: Receipt): string {
  const copy: Record<string, unknown> = {};
  for (const field of RECEIPT_FIELDS) copy[field] = receipt[field];
  return `${JSON.stringify({ stamp: nextStamp(), receipt: copy })}\n`;
}

/** The receipt and its stamp in `text`, if it is a whole receipt for `idGen`. */
function stampedOf(text: string, idGen: string | null): { stamp: number; receipt: Receipt } | null {
  try {
    const { stamp, receipt } = JSON.parse(text) as { stamp: unknown; receipt: Record<string, unknown> };
    if (typeof stamp !== 'number' || typeof receipt !== 'object' || receipt === null) return null;
    if (typeof receipt['id_gen'] !== 'string' || (idGen !== null && receipt['id_gen'] !== idGen)) return null;
    const copy: Record<string, unknown> = {};
    for (const field of RECEIPT_FIELDS) copy[field] = receipt[field] ?? null;
    return { stamp, receipt: copy as unknown as Receipt };
  } catch {
    return null;
  }
}

/**
 * Receipts and claims as files in a directory of their own, with nothing but Node's file system
 * (no native module; Bun and Deno run it through node:fs). Survives restarts; receivers in one
 * process or in several on one host may share the directory: its claims let one of them at a
 * time handle a callback. Files are named by the SHA-256 of the `id_gen`, never by its text.
 *
 * - A receipt is written aside and linked into `receipts/`: whole or absent, and the first of
 *   two links wins. There is no fsync per receipt (SQLite's `synchronous = NORMAL` had none per
 *   commit either): a power loss can lose or truncate the latest receipts, and a truncated one
 *   counts as absent, so the callback's redelivery runs the handler again (at-least-once).
 * - A claim is a file in `claims/`, made with link when there is none. An expired claim is
 *   taken over under a lock file named after it (made with an exclusive create), re-read under
 *   that lock and replaced with rename: two processes taking it over at once cannot both win,
 *   and the claim is never absent meanwhile. A lock older than the taker's TTL (its taker died
 *   mid-takeover) is stepped over, never deleted: the next one in its chain is taken.
 * - `add` links the receipt, then deletes the claim: another process sees one or the other. A
 *   claimer that got its claim just as a receipt appeared finds the receipt after claiming and
 *   gives the claim back.
 *
 * What remains is what SQLite had: a holder blocked past its TTL (or a taker blocked that long
 * mid-takeover) may find its claim taken over while its handler runs, and its own renewal or
 * release then races the new holder's claim. After a power loss, a damaged receipt is moved
 * aside and checked before it goes; a whole one that another process linked in its place
 * meanwhile is linked back, and is absent for that moment. Temporary files and locks left by
 * a process that died are swept when a store opens the directory and hourly after.
 *
 * The calls a callback makes (claim, get, add, renew, release) use synchronous file calls, as
 * the SQLite store did: microseconds each on a local disk, but a slow or remote disk blocks the
 * event loop for as long. `list` and the sweep are asynchronous.
 *
 * @example
 * const store = new DirectoryReceiptStore('./callbacks/.mediahook');
 * const receiver = createReceiver({ out: './callbacks', store });
 */
export class DirectoryReceiptStore implements ReceiptStore, ReceiptClaims {
  readonly directory: string;
  readonly #folders: StoreFolders;
  #sweeping: Promise<void>;
  readonly #sweeper: ReturnType<typeof setInterval>;

  constructor(directory: string) {
    this.directory = resolve(directory);
    this.#folders = new StoreFolders(this.directory);
    this.#sweeping = this.#sweep();
    this.#sweeper = setInterval(() => {
      this.#sweeping = this.#sweeping.then(() => this.#sweep());
    }, STALE_MS);
    this.#sweeper.unref();
  }

  #receiptPath(key: string): string {
    return join(this.#folders.receipts, `${key}.json`);
  }

  #claimPath(key: string): string {
    return join(this.#folders.claims, `${key}.json`);
  }

  async get(idGen: string): Promise<Receipt | undefined> {
    const path = this.#receiptPath(keyOf(idGen));
    const text = textOf(path);
    if (text === undefined) return undefined;
    const found = stampedOf(text, idGen);
    if (found) return found.receipt;
    // Only a crash leaves a receipt cut short: it counts as absent, and is set aside so that
    // the claims it would block can be taken again.
    this.#setAsideDamaged(path, idGen);
    return undefined;
  }

  #setAsideDamaged(path: string, idGen: string): void {
    const fd = openOrNull(path);
    if (fd === null) return;
    let judged: Stats | null = null;
    try {
      // The stats and the bytes through one descriptor: what is judged is what is removed.
      const info = fstatSync(fd);
      if (!stampedOf(readFileSync(fd, 'utf8'), idGen)) judged = info;
    } finally {
      closeSync(fd);
    }
    if (judged && this.#folders.removeIfSame(path, judged)) {
      emitWarning(`a damaged receipt for callback ${idGen} was set aside: it will be handled again`);
    }
  }

  async add(receipt: Receipt): Promise<boolean> {
    const key = keyOf(receipt.id_gen);
    const added = this.#folders.create(this.#receiptPath(key), receiptText(receipt));
    // After the receipt, so that other processes always see one or the other; with a receipt
    // there, any claim on the id is void, whoever holds it.
    removeFile(this.#claimPath(key));
    return added;
  }

  /**
   * The newest receipts first: by the files' times, and within one tick of the file system's
   * clock by the stamps inside them. Costs a read of the directory and a stat of every receipt
   * (O(n) in receipts kept: 0.1–0.3 s for 5,000 on a busy two-core machine), then `limit` reads,
   * more only when several files share the time of the last one kept. For looking at, not for
   * every request.
   */
  async list(options: { limit?: number } = {}): Promise<Receipt[]> {
    const limit = options.limit ?? 100;
    if (!(limit > 0)) return [];
    const names = (await namesIn(this.#folders.receipts)).filter((name) => KEYED_NAME.test(name));
    // Asynchronous, unlike the calls a callback makes: this is many calls, and may wait.
    const dated = await mapBounded(names, LIST_WIDTH, async (name) => {
      const info = await stat(join(this.#folders.receipts, name)).catch(() => null);
      return { name, time: info?.mtimeMs ?? -Infinity };
    });
    dated.sort((a, b) => b.time - a.time);
    const last = dated[Math.min(limit, dated.length) - 1]?.time;
    const chosen = dated.filter((entry, at) => at < limit || entry.time === last);
    const read = await mapBounded(chosen, LIST_WIDTH, async ({ name }) => {
      const text = await readFile(join(this.#folders.receipts, name), 'utf8').catch(() => null);
      const found = text === null ? null : stampedOf(text, null);
      // A file that does not hold the receipt its name says is no receipt.
      return found && `${keyOf(found.receipt.id_gen)}.json` === name ? found : null;
    });
    const receipts = read.filter((found) => found !== null);
    receipts.sort((a, b) => b.stamp - a.stamp);
    return receipts.slice(0, limit).map((found) => found.receipt);
  }

  #hasReceipt(key: string): boolean {
    return statOf(this.#receiptPath(key)) !== null;
  }

  #readClaim(key: string): ClaimFile | undefined {
    const text = textOf(this.#claimPath(key));
    return text === undefined ? undefined : claimOf(text);
  }

  async claim(idGen: string, holder: string, ttlMs: number): Promise<boolean> {
    const key = keyOf(idGen);
    if (this.#hasReceipt(key)) return false;
    const path = this.#claimPath(key);
    // A claim that changes under each look (released, renewed, taken) is looked at again, a
    // few times; the caller polls after a refusal anyway.
    for (let round = 0; round < 4; round++) {
      const mine = claimText(idGen, holder, ttlMs);
      if (!this.#folders.create(path, mine)) {
        const current = this.#readClaim(key);
        if (!current) continue;
        if (current.holder === holder) {
          this.#folders.replace(path, mine);
          return true;
        }
        if (current.expiresAt > Date.now()) return false;
        const takeover = this.#takeOver(key, current, mine, ttlMs);
        if (takeover === 'busy') return false;
        if (takeover === 'changed') continue;
      }
      // The receipt may have appeared, and its claim gone, between the first look and ours.
      if (!this.#hasReceipt(key)) return true;
      removeFile(path);
      return false;
    }
    return false;
  }

  /**
   * Replaces the expired claim `stale` with `replacement` (or deletes it, for null), under the
   * lock that serializes takeovers of that one claim: 'busy' when another process holds it,
   * 'changed' when the claim is no longer `stale`.
   */
  #takeOver(key: string, stale: ClaimFile, replacement: string | null, ttlMs: number): Takeover {
    const path = this.#claimPath(key);
    for (let link = 0; ; link++) {
      const lock = join(this.#folders.claims, `${key}.${stale.instance}.${link}.lock`);
      if (this.#folders.createEmpty(lock)) {
        try {
          // Under the lock nobody else replaces `stale`: if it is still there, it is ours to replace.
          if (this.#readClaim(key)?.instance !== stale.instance) return 'changed';
          if (replacement === null) removeFile(path);
          else this.#folders.replace(path, replacement);
          return 'taken';
        } finally {
          // A late taker of `stale` that gets this lock next finds the claim changed; one left
          // behind (the removal failed) is stepped over like a dead taker's.
          removeQuietly(lock);
        }
      }
      const info = statOf(lock);
      if (!info) return 'changed';
      if (Date.now() - info.mtimeMs < Math.max(ttlMs, MIN_LOCK_AGE_MS)) return 'busy';
    }
  }

  async renew(idGen: string, holder: string, ttlMs: number): Promise<boolean> {
    const key = keyOf(idGen);
    if (this.#readClaim(key)?.holder !== holder) return false;
    this.#folders.replace(this.#claimPath(key), claimText(idGen, holder, ttlMs));
    return true;
  }

  async release(idGen: string, holder: string): Promise<void> {
    const key = keyOf(idGen);
    if (this.#readClaim(key)?.holder === holder) removeFile(this.#claimPath(key));
  }

  /** Waits for a sweep under way; the store holds nothing open between calls. */
  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    await this.#sweeping;
  }

  /** Removes what processes that died left: temporary files, takeover locks, long-expired claims. */
  #sweep(): Promise<void> {
    return (async () => {
      await this.#folders.sweepTemporary(STALE_MS);
      for (const name of await namesIn(this.#folders.claims)) await this.#sweepClaim(name);
    })().catch((error: unknown) =>
      emitWarning(`stale files in ${this.directory} could not be removed: ${String(error)}`),
    );
  }

  async #sweepClaim(name: string): Promise<void> {
    const path = join(this.#folders.claims, name);
    const lock = LOCK_NAME.exec(name);
    if (lock) {
      // A lock on a claim that is gone or was replaced guards nothing: its instance never returns.
      const info = statOf(path);
      const [, key = '', instance] = lock;
      if (info && Date.now() - info.mtimeMs >= STALE_MS && this.#readClaim(key)?.instance !== instance) {
        removeFile(path);
      }
      return;
    }
    if (!KEYED_NAME.test(name)) return;
    const key = name.slice(0, -'.json'.length);
    const claim = this.#readClaim(key);
    // Claims of processes that died and whose callbacks never came again.
    if (claim && Date.now() - claim.expiresAt >= STALE_MS) this.#takeOver(key, claim, null, STALE_MS);
  }
}
