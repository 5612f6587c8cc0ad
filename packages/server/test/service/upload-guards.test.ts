/**
 * The guards on `POST /v1/callbacks`, the receiver's own: a declared length over the limit is
 * answered 413 before any of the body is sent; a body that stalls, or trickles under the
 * minimum rate, is answered 408 upload_too_slow, and nothing of it is kept.
 */
import { once } from 'node:events';
import { readdir } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningService, startService } from './service-harness.ts';

const BOUNDARY = 'guard-boundary';
const MAX_FILE_BYTES = 256 * 1024;

/** The start of a hand-in: its text parts and the head of its JPEG file part. */
function bodyHead(idGen: string): Buffer {
  const text = (name: string, value: string) =>
    `--${BOUNDARY}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  return Buffer.concat([
    Buffer.from(
      text('webhook_url', 'http://127.0.0.1:9/hook') +
        text('family', 'A') +
        text('id_gen', idGen) +
        `--${BOUNDARY}\r\ncontent-disposition: form-data; name="result"; filename="r.jpg"\r\n` +
        'content-type: image/jpeg\r\n\r\n',
    ),
    Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
    Buffer.alloc(4096, 1),
  ]);
}

/** A raw request announcing `length` bytes; resolves with the whole answer once the server closes. */
function upload(url: string, length: number): { socket: Socket; answer: Promise<string> } {
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.write(
    `POST /v1/callbacks HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n` +
      `content-type: multipart/form-data; boundary=${BOUNDARY}\r\ncontent-length: ${length}\r\n\r\n`,
  );
  let text = '';
  socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk));
  socket.on('error', () => {});
  const answer = once(socket, 'close').then(() => text);
  return { socket, answer };
}

describe('the guards on POST /v1/callbacks', () => {
  let run: RunningService;

  beforeAll(async () => {
    run = await startService({
      maxSubmittedFileBytes: MAX_FILE_BYTES,
      uploadGuards: { idleTimeoutMs: 600, rateWindowMs: 1_500 },
    });
  });
  afterAll(async () => {
    await run?.stop();
  });

  const kept = async () => {
    const files = await readdir(join(run.dir, 'results')).catch(() => [] as string[]);
    const keys: string[] = [];
    for await (const key of run.service.blobs.keys()) keys.push(key);
    return [...files, ...keys];
  };

  it('answers a Content-Length over the limit 413 file_too_large before reading the body', async () => {
    const { socket, answer } = upload(run.url, 2 * 1024 ** 3);
    // Not a byte of the body is sent: the answer can only come from the headers.
    const text = await answer;
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).toMatch(/"code":"file_too_large"/);
  });

  it('answers a body that stalls 408 upload_too_slow, keeping nothing', async () => {
    const head = bodyHead('stalled-upload');
    const { socket, answer } = upload(run.url, head.length + 100_000);
    socket.write(head);
    const text = await answer;
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toMatch(/"code":"upload_too_slow"/);
    expect(await kept()).toEqual([]);
    expect((await run.get('/v1/operations/stalled-upload')).status).toBe(404);
  });

  it('answers a body that trickles under the minimum rate 408 upload_too_slow, keeping nothing', async () => {
    const head = bodyHead('trickled-upload');
    const { socket, answer } = upload(run.url, head.length + 100_000);
    socket.write(head);
    // A byte every 100 ms: never idle for the idle timeout, far under 64 KiB/s.
    const trickle = setInterval(() => socket.write(Buffer.from([1])), 100);
    const text = await answer.finally(() => clearInterval(trickle));
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toMatch(/"code":"upload_too_slow"/);
    expect(text).toMatch(/bytes\/s/);
    expect(await kept()).toEqual([]);
  });
});
