import { randomBytes } from 'node:crypto';
import {
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  type Stats,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { readdir, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** Files and folders of a store are its process's business: not readable by anyone else. */
const FILE_MODE = 0o600;
const FOLDER_MODE = 0o700;

/**
 * Temporary names: a random prefix drawn once per process and a counter. Unique across the
 * processes sharing a directory, unguessable from outside them, and one random draw per process
 * instead of one per name; the exclusive create still refuses a name that exists. The prefix is drawn on first use: a Worker may not draw random values while it loads.
 */
let namePrefix: string | undefined;
let nameCounter = 0;

/** A name no other process or call uses: for temporary files and for claims' nonces. */
export function uniqueName(): string {
  namePrefix ??= randomBytes(9).toString('base64url');
  return `${namePrefix}-${(nameCounter++).toString(36)}`;
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

function isMissing(error: unknown): boolean {
  return errorCode(error) === 'ENOENT';
}

function isTaken(error: unknown): boolean {
  return errorCode(error) === 'EEXIST';
}

/** Whether two stats are of one file, as it was then: a reused inode has another time or size. */
function sameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;
}

/** The stats of `path`, or null when there is nothing there. */
export function statOf(path: string): Stats | null {
  try {
    return statSync(path);
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

/** The text of the file at `path`, or undefined when there is none. */
export function textOf(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/** Removes `path`; one already gone is fine. */
export function removeFile(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
}

/** The names in `folder`, none when it is missing. */
export async function namesIn(folder: string): Promise<string[]> {
  try {
    return await readdir(folder);
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

/** `map` with at most `width` calls running at once: a directory of 100,000 files is not 100,000 open promises. */
export async function mapBounded<T, R>(
  items: readonly T[],
  width: number,
  map: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const at = next++;
      results[at] = await map(items[at] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return results;
}

/**
 * The folders of a store's directory, and the ways a file appears in them: whole or not at all.
 * The folders are made the first time a write finds one missing, and again if they are deleted
 * under a running store.
 *
 * These are synchronous, as the SQLite store's statements were: each is a system call or three
 * of a few microseconds on a local disk, where a trip through the thread pool costs more and
 * waits behind the result files' fsyncs there.
 */
export class StoreFolders {
  readonly receipts: string;
  readonly claims: string;
  readonly temporary: string;

  constructor(readonly root: string) {
    this.receipts = join(root, 'receipts');
    this.claims = join(root, 'claims');
    this.temporary = join(root, 'tmp');
  }

  /** Runs `write`, once more after making the folders if it failed for want of one. */
  #withFolders<T>(write: () => T): T {
    try {
      return write();
    } catch (error) {
      if (!isMissing(error)) throw error;
      // The parents with the usual mode (they may be the receiver's `out`), the store's own 0700.
      mkdirSync(dirname(this.root), { recursive: true });
      for (const folder of [this.root, this.receipts, this.claims, this.temporary]) {
        mkdirSync(folder, { recursive: true, mode: FOLDER_MODE });
      }
      return write();
    }
  }

  /** A new temporary file holding `data`, all of it or none. */
  #temporary(data: string): string {
    const path = join(this.temporary, `${uniqueName()}.tmp`);
    try {
      this.#withFolders(() => writeFileSync(path, data, { flag: 'wx', mode: FILE_MODE }));
    } catch (error) {
      // A write cut short (no space left) leaves no piece of the file behind.
      removeQuietly(path);
      throw error;
    }
    return path;
  }

  /**
   * Puts `data` at `path` unless a file is there: true when this call put it. Written aside and
   * then linked, so that no reader ever sees it half-written, and the link refuses an existing
   * name atomically across processes.
   */
  create(path: string, data: string): boolean {
    const temporary = this.#temporary(data);
    try {
      this.#withFolders(() => linkSync(temporary, path));
      return true;
    } catch (error) {
      if (!isTaken(error)) throw error;
      // Over NFS a retried link whose first reply was lost answers EEXIST though it linked:
      // the temporary file then has a second name.
      return statSync(temporary).nlink === 2;
    } finally {
      // Left behind only if this fails too; the sweep removes it later.
      removeQuietly(temporary);
    }
  }

  /** Puts an empty file at `path` unless one is there: true when this call made it. */
  createEmpty(path: string): boolean {
    try {
      this.#withFolders(() => writeFileSync(path, '', { flag: 'wx', mode: FILE_MODE }));
      return true;
    } catch (error) {
      if (isTaken(error)) return false;
      throw error;
    }
  }

  /** Replaces whatever is at `path` with `data` in one step: readers see the old file or the new. */
  replace(path: string, data: string): void {
    const temporary = this.#temporary(data);
    try {
      this.#withFolders(() => renameSync(temporary, path));
    } catch (error) {
      removeQuietly(temporary);
      throw error;
    }
  }

  /**
   * Removes the file at `path` if it is still the one `judged` describes. It is moved aside
   * first and looked at there: a file that another process put at `path` since is linked back
   * instead of lost. Returns whether the judged file went.
   */
  removeIfSame(path: string, judged: Stats): boolean {
    const aside = join(this.temporary, `${uniqueName()}.aside`);
    try {
      this.#withFolders(() => renameSync(path, aside));
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
    const same = sameFile(statSync(aside), judged);
    if (!same) {
      try {
        linkSync(aside, path);
      } catch (error) {
        // Another file took the name meanwhile: it is as new as the one set aside.
        if (!isTaken(error)) throw error;
      }
    }
    unlinkSync(aside);
    return same;
  }

  /** Removes the temporary files older than `olderThanMs`: left by processes that died mid-write. */
  async sweepTemporary(olderThanMs: number): Promise<void> {
    for (const name of await namesIn(this.temporary)) {
      const path = join(this.temporary, name);
      const info = await stat(path).catch(() => null);
      if (info?.isFile() && Date.now() - info.mtimeMs >= olderThanMs) {
        await unlink(path).catch(() => {});
      }
    }
  }
}

/** Removes `path` if it can; what stays is swept or stepped over later. */
export function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Gone already, or left to the sweep.
  }
}
