import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { chmod, copyFile, mkdir, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { extensionOf, type MediaType } from 'mediahook/protocol';

const KEY = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}\.(?:jpg|mp4)$/;

/** Result files and their directory are the owner's alone: another local user reads none. */
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/** Files up to this size are read with blocking calls by default (see `blockingReadMaxBytes`). */
export const DEFAULT_BLOCKING_READ_MAX_BYTES = 1024 * 1024;

/** Where a file read whole goes: a buffer of exactly `size` bytes. */
export type AllocateBuffer = (size: number) => Buffer;

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
 * Result files of finished operations, kept in a local directory until their callback is
 * delivered, gone or dead and a retention period has passed. A key is a file name the store
 * gave, never a path from outside.
 *
 * @example
 * const blobs = new DirectoryBlobStore('./data/results');
 * const key = await blobs.putFile(idGen, '/tmp/out.jpg', 'image/jpeg');
 * createReadStream(blobs.pathOf(key));
 */
export class DirectoryBlobStore {
  readonly directory: string;
  readonly #blockingReadMaxBytes: number;

  constructor(directory: string, options: DirectoryBlobStoreOptions = {}) {
    this.directory = directory;
    this.#blockingReadMaxBytes = options.blockingReadMaxBytes ?? DEFAULT_BLOCKING_READ_MAX_BYTES;
  }

  /** The key of an operation's result: `<id_gen>.jpg` or `.mp4` (id_gen is a UUIDv7 here). */
  keyFor(idGen: string, mediaType: MediaType): string {
    const key = `${idGen}${extensionOf(mediaType)}`;
    if (!KEY.test(key)) throw new TypeError(`no blob key can be made of ${JSON.stringify(idGen)}`);
    return key;
  }

  pathOf(key: string): string {
    if (!KEY.test(key)) throw new TypeError(`not a blob key: ${JSON.stringify(key)}`);
    return join(this.directory, key);
  }

  /** Moves (or, across file systems, copies) a finished file in, made 0600; returns its key. */
  async putFile(idGen: string, sourcePath: string, mediaType: MediaType): Promise<string> {
    const key = this.keyFor(idGen, mediaType);
    await mkdir(this.directory, { recursive: true, mode: DIR_MODE });
    const target = this.pathOf(key);
    // A generator (ffmpeg, a command of the user's) wrote it with the umask's mode; a copy keeps it.
    await chmod(sourcePath, FILE_MODE);
    try {
      await rename(sourcePath, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
      const temp = `${target}.${randomBytes(6).toString('hex')}.part`;
      await copyFile(sourcePath, temp);
      await rename(temp, target);
      await unlink(sourcePath);
    }
    return key;
  }

  /** Stores bytes under an operation's key, in a 0600 file. */
  async putBytes(idGen: string, bytes: Uint8Array, mediaType: MediaType): Promise<string> {
    const key = this.keyFor(idGen, mediaType);
    await mkdir(this.directory, { recursive: true, mode: DIR_MODE });
    const temp = `${this.pathOf(key)}.${randomBytes(6).toString('hex')}.part`;
    await writeFile(temp, bytes, { mode: FILE_MODE });
    await rename(temp, this.pathOf(key));
    return key;
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

  async exists(key: string): Promise<boolean> {
    return (await stat(this.pathOf(key)).catch(() => null))?.isFile() ?? false;
  }

  async remove(key: string): Promise<void> {
    await unlink(this.pathOf(key)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  /** Every key in the directory (for retention sweeps). */
  async keys(): Promise<string[]> {
    const names = await readdir(this.directory).catch(() => [] as string[]);
    return names.filter((name) => KEY.test(name));
  }
}
