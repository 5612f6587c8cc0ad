/**
 * Where result files are kept until their callback is final and the retention has passed: the
 * seam every reader and writer goes through (generator, delivery, the API's `/result`, the
 * retention sweep, `POST /v1/callbacks`), so that processes on machines sharing no disk deliver
 * each other's results.
 */
import { createReadStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { extensionOf, type MediaType } from 'mediahook/protocol';

/** What `put` takes: chunks as they come (a Readable, a generator) or already at hand. */
export type BlobBytes = AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

/** A kept file opened for reading: its bytes as they come, and how many there are. */
export interface OpenedBlob {
  stream: Readable;
  size: number;
}

/** Where a file read whole goes: a buffer of exactly `size` bytes. */
export type AllocateBuffer = (size: number) => Buffer;

/**
 * A store of result files by key. Keys are made by {@link blobKeyOf}, never taken from a
 * request. Writing a key again replaces its file whole; a reader sees the old file or the new
 * one, and a write that fails or is aborted leaves no file behind.
 */
export interface BlobStore {
  /** Where the files are, for logs: a directory, `postgres`, or `s3://bucket/prefix`. */
  readonly location: string;
  /** Stores the bytes as they come (never all in memory); resolves with how many there were. */
  put(key: string, bytes: BlobBytes, signal?: AbortSignal): Promise<number>;
  /** Stores a finished local file and removes it from where it was. */
  putFile(key: string, path: string): Promise<number>;
  /** The whole file (for small ones), or null when it is not kept (any longer). */
  read(key: string, expectedBytes?: number, allocate?: AllocateBuffer): Promise<Buffer | null>;
  /** The file as a stream, or null when it is not kept. */
  open(key: string): Promise<OpenedBlob | null>;
  /** The file's size, or null when it is not kept. */
  size(key: string): Promise<number | null>;
  /** Removes a file; removing one that is not there is no error. */
  remove(key: string): Promise<void>;
  /** Every key kept (for retention sweeps). */
  keys(): AsyncIterable<string>;
  /** When the file was written (Unix ms), or null when it is not kept. */
  modifiedAt(key: string): Promise<number | null>;
  /**
   * Aborts uploads begun before `before` (Unix ms) and never finished, where the store keeps
   * such parts (S3 multipart uploads); returns how many. Absent where a failed write leaves
   * nothing.
   */
  abortUploads?(before: number): Promise<number>;
  /** Lets go of connections; files stay. */
  close(): Promise<void>;
}

/**
 * Keys are file names: an id of safe characters, for a result handed in from outside a nonce of
 * its own (two hand-ins of one id never write the same file), and the media's extension.
 */
export const BLOB_KEY = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}(?:\.[0-9a-f]{12})?\.(?:jpg|mp4)$/;

/** The ids a blob key can be made of: what {@link BLOB_KEY} allows before the first dot. */
export const BLOB_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/**
 * The key of an operation's result: `<id_gen>.jpg` or `.mp4`, or `<id_gen>.<nonce>.jpg` with a
 * nonce of 12 hex digits, for an id_gen of safe characters; anything else is refused.
 */
export function blobKeyOf(idGen: string, mediaType: MediaType, nonce?: string): string {
  if (!BLOB_ID.test(idGen)) throw new TypeError(`no blob key can be made of ${JSON.stringify(idGen)}`);
  const key = `${idGen}${nonce === undefined ? '' : `.${nonce}`}${extensionOf(mediaType)}`;
  return checkBlobKey(key);
}

/** The operation a key belongs to. */
export function idGenOfBlobKey(key: string): string {
  return key.slice(0, key.indexOf('.'));
}

/** Throws unless `key` is one {@link blobKeyOf} makes: nothing else names a file. */
export function checkBlobKey(key: string): string {
  if (!BLOB_KEY.test(key)) throw new TypeError(`not a blob key: ${JSON.stringify(key)}`);
  return key;
}

/** Reads a stream whole into a buffer from `allocate` when its size is known, else a fresh one. */
async function readWhole(opened: OpenedBlob, allocate: AllocateBuffer = Buffer.allocUnsafe): Promise<Buffer> {
  const buffer = allocate(opened.size);
  let filled = 0;
  const extra: Buffer[] = [];
  for await (const chunk of opened.stream as AsyncIterable<Buffer>) {
    const fits = Math.min(chunk.length, opened.size - filled);
    chunk.copy(buffer, filled, 0, fits);
    filled += fits;
    if (fits < chunk.length) extra.push(chunk.subarray(fits));
  }
  if (extra.length > 0) return Buffer.concat([buffer, ...extra]);
  return buffer.subarray(0, filled);
}

/**
 * A store kept elsewhere than this machine's disk (a database, an object store): a local file
 * is streamed up and then removed here, and a whole file is read through its stream.
 */
export abstract class RemoteBlobStore implements BlobStore {
  abstract readonly location: string;
  abstract put(key: string, bytes: BlobBytes, signal?: AbortSignal): Promise<number>;
  abstract open(key: string): Promise<OpenedBlob | null>;
  abstract size(key: string): Promise<number | null>;
  abstract remove(key: string): Promise<void>;
  abstract keys(): AsyncIterable<string>;
  abstract modifiedAt(key: string): Promise<number | null>;
  abstract close(): Promise<void>;

  async putFile(key: string, path: string): Promise<number> {
    const bytes = await this.put(key, createReadStream(path, { highWaterMark: 1024 * 1024 }));
    await unlink(path);
    return bytes;
  }

  async read(key: string, _expectedBytes?: number, allocate?: AllocateBuffer): Promise<Buffer | null> {
    const opened = await this.open(key);
    return opened && readWhole(opened, allocate);
  }
}
