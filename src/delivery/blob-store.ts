import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { extensionOf, type MediaType } from '../protocol/index.ts';

const KEY = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}\.(?:jpg|mp4)$/;

/** The first `limit` bytes of a file (fewer when it is shorter), with the callback API. */
function readUpTo(path: string, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    fs.open(path, 'r', (openError, fd) => {
      if (openError) return reject(openError);
      const buffer = Buffer.allocUnsafe(limit);
      const finish = (error: Error | null, filled: number) =>
        fs.close(fd, (closeError) => {
          if (error ?? closeError) reject(error ?? closeError);
          else resolve(buffer.subarray(0, filled));
        });
      // A read may return less than asked before the end: go on until 0 (the end) or full.
      const next = (filled: number): void => {
        if (filled === limit) return finish(null, filled);
        fs.read(fd, buffer, filled, limit - filled, filled, (readError, bytesRead) => {
          if (readError || bytesRead === 0) finish(readError, filled);
          else next(filled + bytesRead);
        });
      };
      next(0);
    });
  });
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

  constructor(directory: string) {
    this.directory = directory;
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

  /** Moves (or, across file systems, copies) a finished file in; returns its key. */
  async putFile(idGen: string, sourcePath: string, mediaType: MediaType): Promise<string> {
    const key = this.keyFor(idGen, mediaType);
    await mkdir(this.directory, { recursive: true });
    const target = this.pathOf(key);
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

  /** Stores bytes under an operation's key. */
  async putBytes(idGen: string, bytes: Uint8Array, mediaType: MediaType): Promise<string> {
    const key = this.keyFor(idGen, mediaType);
    await mkdir(this.directory, { recursive: true });
    const temp = `${this.pathOf(key)}.${randomBytes(6).toString('hex')}.part`;
    await writeFile(temp, bytes);
    await rename(temp, this.pathOf(key));
    return key;
  }

  /**
   * The whole file, or null when it is not kept (any longer). With the size the store recorded,
   * it is one open, one read and one close: a third of what `readFile` costs the event loop,
   * for files read once per callback. A file that turns out larger is read again whole.
   */
  async read(key: string, expectedBytes?: number): Promise<Buffer | null> {
    const path = this.pathOf(key);
    try {
      if (expectedBytes === undefined) return await readFile(path);
      const head = await readUpTo(path, expectedBytes + 1);
      return head.length <= expectedBytes ? head : await readFile(path);
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
