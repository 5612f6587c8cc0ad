/**
 * The load generator and upload client of the receive suite, in a process of its own (neither in
 * a server's nor in the runner's): `receive-load.ts`, driven over IPC (receive-proc.ts).
 *
 * - `jpeg`: autocannon, fixed connections and duration, keep-alive, one pre-built 64 KiB JPEG
 *   callback whose `id_gen` is rewritten in place before each request (a receiver that keeps
 *   receipts would otherwise answer every repeat as a duplicate without storing it).
 * - `upload`: one MP4 callback of any size, the file streamed from a generator that repeats a
 *   1 MiB random block: the client never holds more than that block.
 * - `tcp`: raw loopback, the same block pumped through one connection.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { request } from 'node:http';
import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import autocannon from 'autocannon';
import { encodeCallback, randomBoundary } from '../packages/mediahook/src/protocol/index.ts';
import { buildBody, randomJpeg, randomMp4 } from './bodies.ts';
import { serveCommands } from './receive-proc.ts';

const LIFETIME_MS = 20 * 60_000;
const BLOCK_BYTES = 2 ** 20;

/** `id_gen`s unique across every run of this process: 36 characters, like the service's UUIDs. */
const prefix = randomBytes(4).toString('hex');
let counter = 0;
function nextId(): string {
  counter++;
  return `${prefix}-0000-7000-8000-${counter.toString(16).padStart(12, '0')}`;
}

interface Template {
  body: Buffer;
  contentType: string;
  /** Where the `id_gen` sits in the body: its text part and the file name. */
  at: number[];
}

let template: Template | null = null;

/**
 * The JPEG callback, encoded once by the project's encoder. Rewriting its `id_gen` in place gives
 * the very bytes encoding with the new id would (same length); checked here once.
 */
async function jpegTemplate(fileBytes: number): Promise<Template> {
  if (template) return template;
  const file = randomJpeg(fileBytes);
  const boundary = randomBoundary();
  const built = await buildBody('JPEG', file, 'image/jpeg', boundary);
  const body = Buffer.concat(built.chunks);
  const id = Buffer.from(built.expect.id_gen, 'latin1');
  const at: number[] = [];
  for (let i = body.indexOf(id); i >= 0; i = body.indexOf(id, i + id.length)) at.push(i);
  if (at.length !== 2) throw new Error(`id_gen found ${at.length} times in the JPEG body, expected 2`);
  const probe = nextId();
  for (const i of at) body.write(probe, i, 'latin1');
  const { status, time_gen } = built.expect;
  const again = await encodeCallback(
    { family: 'A', event: 'success', status, id_gen: probe, time_gen, file, mediaType: 'image/jpeg' },
    boundary,
  );
  const pieces: Buffer[] = [];
  for await (const piece of again.body()) pieces.push(piece);
  if (!Buffer.concat(pieces).equals(body)) throw new Error('rewriting id_gen does not give the encoding');
  template = { body, contentType: built.contentType, at };
  return template;
}

export interface LoadResult {
  /** Bytes of one request body. */
  bodyBytes: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  seconds: number;
  requestsPerSecond: number;
  p99Ms: number;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

/** `connections` keep-alive connections posting JPEG callbacks for `seconds`. */
async function jpeg(args: {
  port: number;
  connections: number;
  seconds: number;
  fileBytes: number;
}): Promise<LoadResult> {
  const { body, contentType, at } = await jpegTemplate(args.fileBytes);
  const latencies: number[] = [];
  let ok = 0;
  let non2xx = 0;
  const started = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `http://127.0.0.1:${args.port}/`,
        method: 'POST',
        connections: args.connections,
        pipelining: 1,
        duration: args.seconds,
        // autocannon stops at its first sample tick after the duration: at 100 ms, not 1 s.
        sampleInt: 100,
        timeout: 10,
        headers: { 'content-type': contentType },
        body,
        requests: [
          {
            // autocannon copies the body into the request it sends right after this returns,
            // so one buffer rewritten each time is enough.
            setupRequest: (req) => {
              const id = nextId();
              for (const i of at) body.write(id, i, 'latin1');
              return req;
            },
          },
        ],
      },
      (error, res) => (error ? reject(error) : resolve(res)),
    );
    instance.on('response', (_client, statusCode: number, _bytes, responseTime: number) => {
      if (statusCode === 200) {
        ok++;
        latencies.push(responseTime);
      } else non2xx++;
    });
  });
  const seconds = (performance.now() - started) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  return {
    bodyBytes: body.length,
    ok,
    non2xx: Math.max(non2xx, result.non2xx),
    errors: result.errors,
    timeouts: result.timeouts,
    seconds,
    requestsPerSecond: ok / seconds,
    p99Ms: percentile(sorted, 0.99),
  };
}

/** A random 1 MiB block, and a copy of it that starts like an MP4 (the receiver sniffs it). */
const block = randomBytes(BLOCK_BYTES);
const firstBlock = randomMp4(BLOCK_BYTES);

/** The file's bytes: the first block, then the same random block over and over. */
async function* mp4Stream(fileBytes: number): AsyncGenerator<Buffer> {
  for (let sent = 0; sent < fileBytes; sent += BLOCK_BYTES) {
    const next = sent === 0 ? firstBlock : block;
    yield fileBytes - sent >= BLOCK_BYTES ? next : next.subarray(0, fileBytes - sent);
  }
}

export interface UploadResult {
  seconds: number;
  status: number;
  /** Bytes of the whole request body. */
  bytes: number;
  answer: string;
}

/** One MP4 callback of `fileBytes`, streamed; timed from the request to the end of the answer. */
async function upload(args: { port: number; fileBytes: number }): Promise<UploadResult> {
  const encoded = await encodeCallback({
    family: 'A',
    event: 'success',
    status: 'success',
    id_gen: nextId(),
    time_gen: new Date().toISOString(),
    file: { stream: Readable.from(mp4Stream(args.fileBytes)), size: args.fileBytes },
    mediaType: 'video/mp4',
  });
  const started = performance.now();
  const req = request({
    host: '127.0.0.1',
    port: args.port,
    method: 'POST',
    path: '/',
    agent: false,
    headers: { 'content-type': encoded.contentType, 'content-length': encoded.contentLength },
  });
  const answered = new Promise<{ status: number; answer: string }>((resolve, reject) => {
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.once('end', () => resolve({ status: res.statusCode ?? 0, answer: text }));
      res.once('error', reject);
    });
    req.once('error', reject);
  });
  // A server that answers early (a failure) stops reading: the answer is what tells why.
  await pipeline(Readable.from(encoded.body()), req).catch(() => {});
  const { status, answer } = await answered;
  return { seconds: (performance.now() - started) / 1000, status, bytes: encoded.contentLength, answer };
}

/** `bytes` pumped through one loopback connection, timed until the server has counted them all. */
async function tcp(args: { port: number; bytes: number }): Promise<{ seconds: number }> {
  const started = performance.now();
  const socket = connect(args.port, '127.0.0.1');
  await once(socket, 'connect');
  let reply = '';
  socket.setEncoding('utf8');
  socket.on('data', (text: string) => {
    reply += text;
  });
  const ended = once(socket, 'end');
  for (let sent = 0; sent < args.bytes; sent += BLOCK_BYTES) {
    const piece = args.bytes - sent >= BLOCK_BYTES ? block : block.subarray(0, args.bytes - sent);
    if (!socket.write(piece)) await once(socket, 'drain');
  }
  socket.end();
  await ended;
  const seconds = (performance.now() - started) / 1000;
  if (Number(reply.trim()) !== args.bytes)
    throw new Error(`raw-tcp counted ${reply.trim()} of ${args.bytes}`);
  return { seconds };
}

serveCommands(0, { jpeg, upload, tcp }, LIFETIME_MS);
