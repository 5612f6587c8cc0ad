/**
 * The raw callbacks `listen` keeps for replay: each request's headers and exact body bytes under
 * `<out>/.requests/`, the newest `maxRequests` within `maxBytes`, the oldest evicted first.
 */
import { createReadStream } from 'node:fs';
import { chmod, open, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { uuidv7 } from '../protocol/index.ts';
import { removeStaleTemporaryFiles } from '../receiver/disk-sink.ts';
import { type FileModes, fileModesOf, makeParentDirectory } from '../receiver/file-modes.ts';
import { ReceiverError } from '../receiver/receiver-error.ts';

/** One kept request, as its `<id>.json` says; its body is `<id>.body` beside it. */
export interface KeptRequest {
  /** A UUIDv7: kept requests sort by it in the order they came. */
  id: string;
  receivedAt: string;
  /** The callback's id_gen, as the receiver read it. */
  idGen: string;
  /** The headers sent again: Content-Type and every `webhook-*` header, as received. */
  headers: [string, string][];
  bytes: number;
}

/** The folder of kept requests inside a `listen --out` directory. */
const KEPT_FOLDER = '.requests';

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A temporary file untouched this long belongs to no live upload (as the receiver's own). */
const STALE_TEMPORARY_MS = 60 * 60 * 1000;

/** A body being copied as it arrives; `commit` keeps it, `discard` drops it. */
interface KeptBodyWriter {
  /** The body, each chunk on disk before it is passed on: memory stays flat, whatever the size. */
  tee(body: AsyncIterable<Uint8Array> | Uint8Array): AsyncIterable<Uint8Array>;
  commit(details: Pick<KeptRequest, 'idGen' | 'headers'>): Promise<KeptRequest>;
  discard(): Promise<void>;
}

/** Failing to keep the copy fails the callback with a code of its own, not as a cut body. */
function notKept(error: unknown): ReceiverError {
  const code = (error as NodeJS.ErrnoException).code ?? String(error);
  return new ReceiverError('storage_failed', `the request could not be kept for replay (${code})`, {
    cause: error,
  });
}

/**
 * The body, each chunk written to `path` before it is passed on. The source is read by hand,
 * not with for-await: ending the copy early must not destroy the request, whose connection
 * still carries the receiver's answer.
 */
async function* copiedTo(
  path: string,
  modes: FileModes,
  body: AsyncIterable<Uint8Array> | Uint8Array,
  onWritten: (bytes: number) => void,
): AsyncGenerator<Uint8Array> {
  // The folder is made with the first request: a listen that received nothing leaves nothing.
  await makeParentDirectory(path, modes).catch((error: unknown) => {
    throw notKept(error);
  });
  const handle = await open(path, 'wx', modes.file).catch((error: unknown) => {
    throw notKept(error);
  });
  // A widened mode is set past the umask, as for the received files.
  if (modes.exactFile) await handle.chmod(modes.file);
  const write = async (chunk: Uint8Array) => {
    await handle.write(chunk).catch((error: unknown) => {
      throw notKept(error);
    });
    onWritten(chunk.length);
  };
  try {
    if (body instanceof Uint8Array) {
      await write(body);
      yield body;
      return;
    }
    const chunks = body[Symbol.asyncIterator]();
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
      await write(next.value);
      yield next.value;
    }
  } finally {
    await handle.close();
  }
}

/**
 * The kept requests of one `--out` directory.
 *
 * @example
 * const kept = new KeptRequests('./callbacks');
 * for (const request of await kept.list()) console.log(request.id, request.bytes);
 */
export class KeptRequests {
  readonly directory: string;
  readonly #modes: FileModes;
  /** Kept requests being sent now, with how many sends: eviction leaves them until done. */
  readonly #held = new Map<string, number>();

  /** The kept requests of `out`, to read; {@link KeptRequests.create} to keep more there. */
  constructor(
    out: string,
    readonly limits: { maxRequests: number; maxBytes: number } = {
      maxRequests: Infinity,
      maxBytes: Infinity,
    },
    modes: FileModes = fileModesOf({}),
  ) {
    this.directory = join(out, KEPT_FOLDER);
    this.#modes = modes;
  }

  /** Kept requests to add to, the folder cleared of what a killed process left. */
  static create(
    out: string,
    limits: { maxRequests: number; maxBytes: number },
    modes: FileModes = fileModesOf({}),
  ): KeptRequests {
    const kept = new KeptRequests(out, limits, modes);
    // Only what no live process writes any more: another may share the folder.
    void removeStaleTemporaryFiles(kept.directory, STALE_TEMPORARY_MS).catch(() => {});
    return kept;
  }

  /** Starts keeping a request whose body is about to be read. */
  begin(): KeptBodyWriter {
    const id = uuidv7();
    const part = join(this.directory, `.incoming-${id}.part`);
    const modes = this.#modes;
    let bytes = 0;
    let copying: AsyncGenerator<Uint8Array> | null = null;
    return {
      tee(body) {
        copying = copiedTo(part, modes, body, (written) => (bytes += written));
        return copying;
      },
      commit: async ({ idGen, headers }) => {
        const kept: KeptRequest = { id, receivedAt: new Date().toISOString(), idGen, headers, bytes };
        await rename(part, this.#bodyPath(id));
        // The description last, and whole: a request is listed only once both are in place.
        const temporary = join(this.directory, `.incoming-${id}.json.part`);
        await writeFile(temporary, JSON.stringify(kept), { mode: modes.file, flag: 'wx' });
        if (modes.exactFile) await chmod(temporary, modes.file);
        await rename(temporary, join(this.directory, `${id}.json`));
        return kept;
      },
      async discard() {
        // A receiver that refused the body midway reads no further: the copy stops here.
        void copying?.return(undefined).catch(() => {});
        await unlink(part).catch(() => {});
      },
    };
  }

  /** Every kept request, oldest first. */
  async list(): Promise<KeptRequest[]> {
    const names = await readdir(this.directory).catch(() => [] as string[]);
    const ids = names
      .filter((name) => name.endsWith('.json') && ID.test(name.slice(0, -5)))
      .map((name) => name.slice(0, -5))
      .sort();
    const kept = await Promise.all(ids.map((id) => this.get(id)));
    return kept.filter((request) => request !== null);
  }

  /** One kept request by id; null when there is none (or it was evicted meanwhile). */
  async get(id: string): Promise<KeptRequest | null> {
    if (!ID.test(id)) return null;
    try {
      return JSON.parse(await readFile(join(this.directory, `${id}.json`), 'utf8')) as KeptRequest;
    } catch {
      return null;
    }
  }

  /** The body's bytes, from the start. */
  body(kept: KeptRequest): Readable {
    return createReadStream(this.#bodyPath(kept.id));
  }

  /** Runs `use` with the request kept in place (not evicted meanwhile), then evicts. */
  async hold<T>(kept: KeptRequest, use: () => Promise<T>): Promise<T> {
    this.#held.set(kept.id, (this.#held.get(kept.id) ?? 0) + 1);
    try {
      return await use();
    } finally {
      const count = this.#held.get(kept.id)! - 1;
      if (count === 0) this.#held.delete(kept.id);
      else this.#held.set(kept.id, count);
      await this.evict();
    }
  }

  /** Drops the oldest requests, past the count or the bytes, that nothing is sending now. */
  async evict(): Promise<void> {
    const kept = await this.list();
    let count = kept.length;
    let bytes = kept.reduce((total, request) => total + request.bytes, 0);
    for (const request of kept) {
      if (count <= this.limits.maxRequests && bytes <= this.limits.maxBytes) break;
      if (this.#held.has(request.id)) continue;
      // The description first: a request half removed is no longer listed.
      await unlink(join(this.directory, `${request.id}.json`)).catch(() => {});
      await unlink(this.#bodyPath(request.id)).catch(() => {});
      count -= 1;
      bytes -= request.bytes;
    }
  }

  #bodyPath(id: string): string {
    return join(this.directory, `${id}.body`);
  }
}
