import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { chmod, copyFile, mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import {
  type AllocateBuffer,
  BLOB_KEY,
  type BlobBytes,
  type BlobStore,
  checkBlobKey,
  type OpenedBlob,
} from './blob-store.ts';

/** Result files and their directory are the owner's alone: another local user reads none. */
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/** Files up to this size are read with blocking calls by default (see `blockingReadMaxBytes`). */
const DEFAULT_BLOCKING_READ_MAX_BYTES = 1024 * 1024;

/** The whole file, read with blocking calls, or null when it is larger than `limit`. */
function readNow(path: string, limit: number, allocate: AllocateBuffer): Buffer | null {
  const fd = fs.openSync(path, 'r');
  try {
    const { size } = fs.fstatSync(fd);
    if (size > limit) return null;
    const buffer = allocate(size);
    let filled = 0;
    // A read may return less than asked before the end: go on until the end or full.
    while (filled < size) {
      const read = fs.readSync(fd, buffer, filled, size - filled, filled);
      if (read === 0) break;
      filled += read;
    }
    return buffer.subarray(0, filled);
  } finally {
    fs.closeSync(fd);
  }
}

export interface DirectoryBlobStoreOptions {
  /**
   * Files up to this size are read with blocking calls on the event loop: from a local disk's
   * page cache a 64 KiB result takes about 20 µs that way, where the open, read and close
   * handed to the thread pool cost the loop several times that under load (each wakes a pool
   * thread that competes for the CPU). 1 MiB by default; 0 reads every file through the
   * thread pool, which is right when the directory is on a network file system, where one read
   * may wait for the network.
   */
  blockingReadMaxBytes?: number;
}

/**
 * Result files kept in a local directory (`DATA/results` by default): the store of a single
 * machine, or of several sharing a network file system.
 *
 * @example
 * const blobs = new DirectoryBlobStore('./data/results');
 * await blobs.putFile(blobKeyOf(idGen, 'image/jpeg'), '/tmp/out.jpg');
 * const opened = await blobs.open(blobKeyOf(idGen, 'image/jpeg'));
 */
export class DirectoryBlobStore implements BlobStore {
  readonly directory: string;
  readonly #blockingReadMaxBytes: number;

  constructor(directory: string, options: DirectoryBlobStoreOptions = {}) {
    this.directory = directory;
    this.#blockingReadMaxBytes = options.blockingReadMaxBytes ?? DEFAULT_BLOCKING_READ_MAX_BYTES;
  }

  get location(): string {
    return this.directory;
  }

  pathOf(key: string): string {
    return join(this.directory, checkBlobKey(key));
  }

  /** Moves (or, across file systems, copies) a finished file in, made 0600. */
  async putFile(key: string, sourcePath: string): Promise<number> {
    const target = this.pathOf(key);
    await mkdir(this.directory, { recursive: true, mode: DIR_MODE });
    // A generator (ffmpeg, a command of the user's) wrote it with the umask's mode; a copy keeps it.
    await chmod(sourcePath, FILE_MODE);
    const { size } = await stat(sourcePath);
    try {
      await rename(sourcePath, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      const temp = this.#tempOf(target);
      await copyFile(sourcePath, temp);
      await rename(temp, target);
      await unlink(sourcePath);
    }
    return size;
  }

  /** Writes the bytes to a 0600 file beside the target, renamed into place once complete. */
  async put(key: string, bytes: BlobBytes, signal?: AbortSignal): Promise<number> {
    const target = this.pathOf(key);
    await mkdir(this.directory, { recursive: true, mode: DIR_MODE });
    const temp = this.#tempOf(target);
    const file = await open(temp, 'wx', FILE_MODE);
    let written = 0;
    try {
      await pipeline(
        bytes,
        async function* (source: BlobBytes) {
          for await (const chunk of source) {
            written += chunk.byteLength;
            yield chunk;
          }
        },
        file.createWriteStream(),
        ...(signal ? [{ signal }] : []),
      );
      await rename(temp, target);
    } catch (error) {
      await unlink(temp).catch(() => {});
      throw error;
    } finally {
      await file.close().catch(() => {});
    }
    return written;
  }

  /**
   * The whole file, or null when it is not kept (any longer). A file of `expectedBytes` (the
   * size the store recorded) up to `blockingReadMaxBytes` is read at once (see the option);
   * one that turns out larger is read through the thread pool. A file read at once goes into
   * a buffer from `allocate` (a fresh one by default).
   */
  async read(
    key: string,
    expectedBytes?: number,
    allocate: AllocateBuffer = Buffer.allocUnsafe,
  ): Promise<Buffer | null> {
    const path = this.pathOf(key);
    try {
      const limit = this.#blockingReadMaxBytes;
      const now =
        expectedBytes !== undefined && expectedBytes <= limit ? readNow(path, limit, allocate) : null;
      return now ?? (await readFile(path));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  /**
   * Opens the file before anything is sent: one removed meanwhile (a retention sweep, another
   * process) is then read whole from the open handle or not found, never cut short.
   */
  async open(key: string): Promise<OpenedBlob | null> {
    const handle = await open(this.pathOf(key), 'r').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    if (!handle) return null;
    try {
      const info = await handle.stat();
      if (!info.isFile()) {
        await handle.close();
        return null;
      }
      return { stream: handle.createReadStream({ highWaterMark: 256 * 1024 }), size: info.size };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async size(key: string): Promise<number | null> {
    const info = await stat(this.pathOf(key)).catch(() => null);
    return info?.isFile() ? info.size : null;
  }

  async modifiedAt(key: string): Promise<number | null> {
    const info = await stat(this.pathOf(key)).catch(() => null);
    return info?.isFile() ? info.mtimeMs : null;
  }

  async remove(key: string): Promise<void> {
    await unlink(this.pathOf(key)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  async *keys(): AsyncIterable<string> {
    const names = await readdir(this.directory).catch(() => [] as string[]);
    yield* names.filter((name) => BLOB_KEY.test(name));
  }

  async close(): Promise<void> {}

  #tempOf(target: string): string {
    return `${target}.${randomBytes(6).toString('hex')}.part`;
  }
}
