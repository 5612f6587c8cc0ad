/**
 * Shared pieces of the receiver tests: generated result files, encoded (and signed) callbacks,
 * an HTTP client, and looks into the output directory.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { expect, onTestFinished } from 'vitest';
import { encodeCallback, type Family, type MediaType, signBody } from '../../src/protocol/index.ts';
import type { Receipt } from '../../src/receiver/index.ts';
import type { StoreRequest } from './fixtures/store-process.ts';

/** A small JPEG: the SOI marker and an APP0 segment start, random bytes, the EOI marker. */
export function jpegBytes(size = 2048): Buffer {
  const bytes = randomBytes(Math.max(size, 6));
  bytes.set([0xff, 0xd8, 0xff, 0xe0], 0);
  bytes.set([0xff, 0xd9], bytes.length - 2);
  return bytes;
}

/** A small MP4: an `ftyp` box (brand isom) at the start, then random bytes. */
export function mp4Bytes(size = 4096): Buffer {
  const bytes = randomBytes(Math.max(size, 24));
  bytes.set([0, 0, 0, 0x18], 0);
  bytes.write('ftypisom', 4, 'latin1');
  return bytes;
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A fresh `whsec_` secret. */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** A fresh directory under the system temp dir, removed when the current test ends. */
export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mediahook-receiver-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

let counter = 0;

/** An `id_gen` unique within the run; the service's own ids are UUIDv7, but any text goes. */
export function newId(prefix = 'op'): string {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now()}-${counter}`;
}

interface Shape {
  family: Family;
  event: 'success' | 'error';
  mediaType?: MediaType;
}

/** The four shapes of the spec, plus family A carrying an MP4. */
export const SHAPES: readonly (Shape & { label: string })[] = [
  { label: 'A success (JPEG)', family: 'A', event: 'success', mediaType: 'image/jpeg' },
  { label: 'A success (MP4)', family: 'A', event: 'success', mediaType: 'video/mp4' },
  { label: 'A error', family: 'A', event: 'error' },
  { label: 'B success', family: 'B', event: 'success', mediaType: 'image/jpeg' },
  { label: 'B error', family: 'B', event: 'error' },
];

/** A callback ready to send: the exact bytes, their Content-Type, and what went into them. */
export interface Wire {
  id: string;
  family: Family;
  event: 'success' | 'error';
  status: string;
  timeGen: string;
  body: Buffer;
  contentType: string;
  headers: Record<string, string>;
  /** The result file's bytes (success) or null. */
  file: Buffer | null;
  mediaType: MediaType | null;
  message: string | null;
}

interface WireOptions extends Partial<Shape> {
  id?: string;
  file?: Buffer;
  message?: string;
  /** Signs with these secrets (one `v1,` signature each). */
  sign?: string | string[];
  /** Signature timestamp in Unix seconds; default now. */
  timestamp?: number;
}

/** Encodes a callback with the project's encoder and, when asked, signs its exact bytes. */
export async function wire(options: WireOptions = {}): Promise<Wire> {
  const family = options.family ?? 'A';
  const event = options.event ?? 'success';
  const id = options.id ?? newId();
  const status = event;
  const timeGen = new Date().toISOString();
  const mediaType = event === 'success' ? (options.mediaType ?? 'image/jpeg') : null;
  const file =
    event === 'success' ? (options.file ?? (mediaType === 'video/mp4' ? mp4Bytes() : jpegBytes())) : null;
  const message = event === 'error' ? (options.message ?? 'the generator ran out of memory') : null;
  const fields = { family, status, id_gen: id, time_gen: timeGen };
  const encoded = await encodeCallback(
    file && mediaType
      ? { ...fields, event: 'success', file, mediaType }
      : { ...fields, event: 'error', message: message ?? '' },
  );
  const chunks: Buffer[] = [];
  for await (const chunk of encoded.body()) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  expect(body.length).toBe(encoded.contentLength);
  const headers: Record<string, string> = { 'content-type': encoded.contentType };
  if (options.sign !== undefined)
    Object.assign(headers, await signBody(options.sign, id, body, options.timestamp));
  return {
    id,
    family,
    event,
    status,
    timeGen,
    body,
    contentType: encoded.contentType,
    headers,
    file,
    mediaType,
    message,
  };
}

export interface Answer {
  status: number;
  body: {
    received?: boolean;
    id_gen?: string;
    duplicate?: boolean;
    error?: { code: string; message: string };
  };
}

/** POSTs bytes with undici's `request` and parses the JSON answer. */
export async function post(
  url: string,
  body: Uint8Array | string | Readable,
  headers: Record<string, string>,
): Promise<Answer> {
  const response = await request(url, { method: 'POST', body, headers });
  const text = await response.body.text();
  return { status: response.statusCode, body: JSON.parse(text) as Answer['body'] };
}

/** Sends a {@link Wire} callback. */
export function send(url: string, callback: Wire): Promise<Answer> {
  return post(url, callback.body, callback.headers);
}

/** The same through the global `fetch`, a second real client. */
export async function sendWithFetch(url: string, callback: Wire): Promise<Answer> {
  const response = await fetch(url, { method: 'POST', body: callback.body, headers: callback.headers });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

/** Names in the output directory other than the receiver's own folder of receipts. */
export async function storedFiles(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names.filter((name) => name !== '.mediahook').sort();
}

/** Polls until `check` holds, so a test waits for asynchronous clean-up without sleeping blindly. */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Asserts a stored file holds exactly `bytes` (by hash: a deep compare of megabytes is slow). */
export async function expectFile(path: string, bytes: Uint8Array | null): Promise<void> {
  const stored = await readFile(path);
  expect(stored.length).toBe(bytes?.length);
  expect(sha256(stored)).toBe(sha256(bytes ?? new Uint8Array()));
}

/** A receipt as a store keeps it, for store-level tests. */
export function receiptFor(id: string, overrides: Partial<Receipt> = {}): Receipt {
  return {
    id_gen: id,
    event: 'success',
    family: 'A',
    status: 'success',
    time_gen: '2024-05-01T10:00:00.000Z',
    message: null,
    file_path: `/data/${id}.jpg`,
    media_type: 'image/jpeg',
    bytes: 1234,
    sha256: 'ab'.repeat(32),
    received_at: '2024-05-01T10:00:01.000Z',
    ...overrides,
  };
}

const STORE_PROCESS = fileURLToPath(new URL('fixtures/store-process.ts', import.meta.url));

/**
 * A DirectoryReceiptStore on `dir` in a process of its own (fixtures/store-process.ts), once it
 * is open: resolves to what asks it, over IPC. The process is killed when the test ends.
 */
export async function startStoreProcess(dir: string): Promise<(request: StoreRequest) => Promise<unknown>> {
  const child = spawn(process.execPath, ['--import', 'tsx', STORE_PROCESS, dir], {
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  onTestFinished(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await once(child, 'exit');
  });
  let errors = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  const exited = once(child, 'exit').then(() => {
    throw new Error(`the store process exited ${child.exitCode}: ${errors}`);
  });
  await Promise.race([once(child, 'message'), exited]);
  return async (request) => {
    const reply = once(child, 'message') as Promise<[{ result?: unknown; error?: string }]>;
    child.send(request);
    const [{ result, error }] = await Promise.race([reply, exited]);
    if (error !== undefined) throw new Error(error);
    return result;
  };
}
