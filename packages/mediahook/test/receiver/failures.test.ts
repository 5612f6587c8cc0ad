/**
 * What a receiver does when a callback cannot be accepted, through every adapter: malformed
 * shapes, limits, an upload cut off mid-file, a failing handler. Always a 500 with a stable
 * code, nothing left in the output directory, and the receiver still serving.
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ADAPTERS, type Adapter, guardedAdapters, type Harness, startReceiver } from './adapters.ts';
import {
  type Answer,
  eventually,
  expectFile,
  jpegBytes,
  newId,
  post,
  send,
  storedFiles,
  type Wire,
  wire,
} from './helpers.ts';
import { MALFORMED } from './malformed-cases.ts';

function expectRejected(answer: Answer, code: string): void {
  expect(answer.status).toBe(500);
  expect(answer.body).toEqual({ error: { code, message: expect.any(String) } });
}

async function expectNothingKept(harness: Harness, requests = 1): Promise<void> {
  await harness.settled(requests);
  expect(harness.successes).toHaveLength(0);
  expect(harness.errors).toHaveLength(0);
  expect(await storedFiles(harness.out)).toEqual([]);
  expect(await harness.receiver.store.list()).toEqual([]);
}

/** The bytes in 64 KiB chunks, one per turn of the event loop: an upload still going on. */
async function* paced(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += 64 * 1024) {
    yield bytes.subarray(at, at + 64 * 1024);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Gathers what the server sends on a raw connection, for reading once it is closed. */
function collectAnswer(socket: Socket): () => string {
  let answer = '';
  socket.setEncoding('latin1').on('data', (text: string) => {
    answer += text;
  });
  // A write of ours in flight when the server closes may end in a reset: the answer is in.
  socket.on('error', () => {});
  return () => answer;
}

/**
 * POSTs `body` to /callbacks on a raw connection, with `headers` (CRLF-ended lines) besides
 * Host and `Connection: close`, and resolves to all the server sent once it closed.
 */
async function rawExchange(port: number, headers: string, body: Buffer): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  const answer = collectAnswer(socket);
  socket.write(`POST /callbacks HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${headers}\r\n`);
  socket.end(body);
  await once(socket, 'close');
  return answer();
}

/** The answer to a sender too slow: 500 with the `timeout` code, and the connection closed. */
function expectTimeoutAnswer(answer: string): void {
  expect(answer).toMatch(/^HTTP\/1\.1 500 /);
  expect(answer).toMatch(/\r\nconnection: close\r\n/i);
  expect(answer).toContain('"code":"timeout"');
}

/** Still accepting: one valid callback goes through after whatever went before. */
async function expectStillServing(harness: Harness): Promise<void> {
  const callback = await wire({ family: 'B', event: 'success' });
  expect((await send(harness.url, callback)).status).toBe(200);
  await expectFile(join(harness.out, `${callback.id}.jpg`), callback.file);
}

/**
 * Opens a raw connection, sends the headers and the first `sent` bytes of a body whose
 * Content-Length promises all of it, waits until `ready` holds, then drops the connection.
 */
async function cutOff(
  port: number,
  callback: Wire,
  sent: number,
  ready: () => Promise<boolean>,
): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  const head =
    'POST /callbacks HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
    `Content-Type: ${callback.contentType}\r\nContent-Length: ${callback.body.length}\r\n\r\n`;
  socket.write(head);
  socket.write(callback.body.subarray(0, sent));
  try {
    await eventually(ready);
  } finally {
    socket.destroy();
  }
}

describe.each(ADAPTERS)('$name', (adapter) => {
  it.each(MALFORMED)('answers $code to $why, storing nothing', async ({ code, contentType, body }) => {
    const harness = await startReceiver(adapter);
    const headers: Record<string, string> = contentType === null ? {} : { 'content-type': contentType };
    expectRejected(await post(harness.url, body(newId()), headers), code);
    await expectNothingKept(harness);
    expect(harness.outcomes[0]).toMatchObject({ verdict: 'rejected', error: { code } });
  });

  it('answers file_too_large over the configured file limit, storing nothing', async () => {
    const harness = await startReceiver(adapter, { limits: { fileBytes: 1000 } });
    expectRejected(await send(harness.url, await wire({ file: jpegBytes(5000) })), 'file_too_large');
    await expectNothingKept(harness);
    // Exactly at the limit is fine.
    expect((await send(harness.url, await wire({ file: jpegBytes(1000) }))).status).toBe(200);
  });

  it('answers file_too_large from the Content-Length alone when only the file limit is set', async () => {
    const harness = await startReceiver(adapter, { limits: { fileBytes: 1000 } });
    // Over the file limit plus 1 MiB: refused before a byte is read, with the same code as a
    // chunked upload of that file gets once the decoder counts past the limit.
    const callback = await wire({ file: jpegBytes(1000 + 1024 * 1024 + 1) });
    const answer = await send(harness.url, callback);
    expectRejected(answer, 'file_too_large');
    expect(answer.body.error?.message).toContain('1000-byte limit');
    const chunked = await post(harness.url, Readable.from([callback.body]), callback.headers);
    expectRejected(chunked, 'file_too_large');
    await expectNothingKept(harness);
  });

  it('removes the partial file of a result that outgrows the limit midway', async () => {
    const limit = 1536 * 1024;
    const harness = await startReceiver(adapter, { limits: { fileBytes: limit } });
    // Past the sink's 1 MiB write batch, so a temporary file exists when the limit is hit.
    expectRejected(await send(harness.url, await wire({ file: jpegBytes(limit + 1) })), 'file_too_large');
    await expectNothingKept(harness);
  });

  it('gets its 500 to a sender still uploading when the first file bytes refuse the callback', async () => {
    const harness = await startReceiver(adapter);
    // 8 MiB that is neither JPEG nor MP4: refused as its first bytes arrive, long before the
    // upload ends. Closing at once would reset the connection under the sender's upload.
    const callback = await wire({ file: Buffer.alloc(8 * 1024 * 1024, 0x41) });
    const headers = { ...callback.headers, 'content-length': String(callback.body.length) };
    for (let i = 0; i < 3; i++) {
      const answer = await post(harness.url, Readable.from(paced(callback.body)), headers);
      expectRejected(answer, 'media_mismatch');
    }
    await expectNothingKept(harness);
  });

  it('answers body_too_large from the Content-Length alone', async () => {
    const harness = await startReceiver(adapter, { maxBodyBytes: 2000 });
    expectRejected(await send(harness.url, await wire({ file: jpegBytes(5000) })), 'body_too_large');
    await expectNothingKept(harness);
  });

  it('answers body_too_large to a chunked body that outgrows the limit', async () => {
    const harness = await startReceiver(adapter, { maxBodyBytes: 2000 });
    const callback = await wire({ file: jpegBytes(5000) });
    const answer = await post(
      harness.url,
      Readable.from([callback.body.subarray(0, 1000), callback.body.subarray(1000)]),
      callback.headers,
    );
    expectRejected(answer, 'body_too_large');
    await expectNothingKept(harness);
  });

  it('answers unsupported_encoding to a compressed body, and takes Content-Encoding: identity', async () => {
    const harness = await startReceiver(adapter);
    const callback = await wire();
    const compressed = await post(harness.url, gzipSync(callback.body), {
      ...callback.headers,
      'content-encoding': 'gzip',
    });
    expectRejected(compressed, 'unsupported_encoding');
    await expectNothingKept(harness);
    const plain = await post(harness.url, callback.body, {
      ...callback.headers,
      'content-encoding': 'identity',
    });
    expect(plain.status).toBe(200);
  });

  it('answers unsupported_encoding to a transfer coding other than chunked', async () => {
    const harness = await startReceiver(adapter);
    const callback = await wire();
    const answer = await rawExchange(
      harness.port,
      `Content-Type: ${callback.contentType}\r\nTransfer-Encoding: gzip, chunked\r\n`,
      Buffer.concat([
        Buffer.from(`${callback.body.length.toString(16)}\r\n`),
        callback.body,
        Buffer.from('\r\n0\r\n\r\n'),
      ]),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 500 /);
    expect(answer).toContain('"code":"unsupported_encoding"');
    await expectNothingKept(harness);
  });

  it('answers a request with two Content-Types as malformed, whichever frames the body', async () => {
    const harness = await startReceiver(adapter);
    const callback = await wire();
    const answer = await rawExchange(
      harness.port,
      `Content-Type: ${callback.contentType}\r\nContent-Type: multipart/form-data; boundary=other\r\n` +
        `Content-Length: ${callback.body.length}\r\n`,
      callback.body,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 500 /);
    expect(answer).toContain('"code":"malformed_multipart"');
    await expectNothingKept(harness);
  });

  it('honours a smaller text limit', async () => {
    const harness = await startReceiver(adapter, { limits: { textBytes: 10 } });
    const answer = await send(harness.url, await wire({ event: 'error', message: 'eleven char' }));
    expectRejected(answer, 'text_too_large');
    await expectNothingKept(harness);
  });

  it('answers unexpected_part to the other family when limited to one', async () => {
    const harness = await startReceiver(adapter, { family: 'B' });
    expectRejected(await send(harness.url, await wire({ family: 'A' })), 'unexpected_part');
    await expectNothingKept(harness);
    expect((await send(harness.url, await wire({ family: 'B' }))).status).toBe(200);
  });

  it('leaves no file, not even a partial one, when the upload is cut off mid-file', async () => {
    const harness = await startReceiver(adapter);
    // Cut after more than the sink's write batch (2 MiB), so a temporary file exists by then.
    const callback = await wire({ file: jpegBytes(8 * 1024 * 1024) });
    const partial = async () => (await storedFiles(harness.out)).some((name) => name.endsWith('.part'));
    await cutOff(harness.port, callback, 5 * 1024 * 1024, partial);
    await expectNothingKept(harness);
    expect(harness.outcomes[0]).toMatchObject({ verdict: 'rejected', error: { code: 'aborted' } });
    await expectStillServing(harness);
  });

  it('leaves nothing when the upload is cut off among the text parts', async () => {
    const harness = await startReceiver(adapter);
    const callback = await wire();
    await cutOff(harness.port, callback, 150, async () => true);
    await expectNothingKept(harness);
    expect(harness.outcomes[0]).toMatchObject({ verdict: 'rejected', error: { code: 'aborted' } });
    await expectStillServing(harness);
  });

  it('answers handler_failed when the success handler throws, and accepts the retry', async () => {
    let failures = 1;
    const harness = await startReceiver(adapter, {
      onSuccess: () => {
        if (failures-- > 0) throw new Error('database is down');
      },
    });
    const callback = await wire({ family: 'A', event: 'success', mediaType: 'video/mp4' });
    const answer = await send(harness.url, callback);
    expectRejected(answer, 'handler_failed');
    expect(answer.body.error?.message).toContain('database is down');
    expect(harness.successes).toHaveLength(1);
    expect(await storedFiles(harness.out)).toEqual([]);
    expect(await harness.receiver.store.get(callback.id)).toBeUndefined();

    expect((await send(harness.url, callback)).body).toEqual({
      received: true,
      id_gen: callback.id,
      duplicate: false,
    });
    expect(harness.successes).toHaveLength(2);
    await expectFile(join(harness.out, `${callback.id}.mp4`), callback.file);
    expect(await harness.receiver.store.get(callback.id)).toBeDefined();
  });

  it('answers handler_failed when an async error handler rejects, and accepts the retry', async () => {
    let failures = 1;
    const harness = await startReceiver(adapter, {
      onError: async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (failures-- > 0) throw new Error('queue full');
      },
    });
    const callback = await wire({ family: 'B', event: 'error' });
    expectRejected(await send(harness.url, callback), 'handler_failed');
    expect(await harness.receiver.store.get(callback.id)).toBeUndefined();
    expect((await send(harness.url, callback)).status).toBe(200);
    expect(harness.errors).toHaveLength(2);
  });
});

describe.each(guardedAdapters({ idleTimeoutMs: 200 }))('$name with an idle timeout', (adapter) => {
  it('answers 500 timeout to an upload that stalls mid-file, and keeps nothing', async () => {
    const harness = await startReceiver(adapter);
    const callback = await wire({ file: jpegBytes(3 * 1024 * 1024) });
    const socket = connect(harness.port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write(
      `POST /callbacks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${callback.contentType}\r\n` +
        `Content-Length: ${callback.body.length}\r\n\r\n`,
    );
    const answer = collectAnswer(socket);
    socket.write(callback.body.subarray(0, 2 * 1024 * 1024));
    // The server gives up on the silent sender, answers, and closes the connection itself.
    await new Promise((resolve) => socket.once('close', resolve));
    expectTimeoutAnswer(answer());
    await expectNothingKept(harness);
    expect(harness.outcomes[0]).toMatchObject({ verdict: 'rejected', error: { code: 'timeout' } });
    await expectStillServing(harness);
  });

  it('lets a handler run longer than the timeout once the body is in', async () => {
    const harness = await startReceiver(adapter, {
      onSuccess: () => new Promise((resolve) => setTimeout(resolve, 500)),
    });
    const callback = await wire();
    expect((await send(harness.url, callback)).status).toBe(200);
    await expectFile(join(harness.out, `${callback.id}.jpg`), callback.file);
  });
});

/**
 * Sends `callback` over a raw socket, `bytes` every `everyMs`, until the server closes the
 * connection; resolves with how many body bytes were sent by then.
 */
async function trickle(
  port: number,
  callback: Wire,
  bytes: number,
  everyMs: number,
): Promise<{ at: number; answer: string }> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(
    `POST /callbacks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${callback.contentType}\r\n` +
      `Content-Length: ${callback.body.length}\r\n\r\n`,
  );
  const answer = collectAnswer(socket);
  let at = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || at >= callback.body.length) return;
    socket.write(callback.body.subarray(at, at + bytes));
    at += bytes;
  }, everyMs);
  try {
    await new Promise((resolve) => socket.once('close', resolve));
  } finally {
    clearInterval(timer);
  }
  return { at, answer: answer() };
}

/**
 * Trickles a 64 KiB callback at `bytes` every `everyMs` until the server answers and hangs up:
 * it must have done so before the end, with `500 timeout`, kept nothing, reported `error`, and
 * still serve.
 */
async function expectTrickleRefused(adapter: Adapter, bytes: number, everyMs: number, error: object) {
  const harness = await startReceiver(adapter);
  const callback = await wire({ file: jpegBytes(64 * 1024) });
  const { at, answer } = await trickle(harness.port, callback, bytes, everyMs);
  expect(at).toBeLessThan(callback.body.length);
  expectTimeoutAnswer(answer);
  await expectNothingKept(harness);
  expect(harness.outcomes[0]).toMatchObject({ verdict: 'rejected', error });
  await expectStillServing(harness);
}

/** A 256 KiB callback sent at full speed is taken and stored. */
async function expectWholeUploadTaken(adapter: Adapter) {
  const harness = await startReceiver(adapter);
  const callback = await wire({ file: jpegBytes(256 * 1024) });
  expect((await send(harness.url, callback)).status).toBe(200);
  await expectFile(join(harness.out, `${callback.id}.jpg`), callback.file);
}

describe.each(guardedAdapters({ requestTimeoutMs: 400 }))('$name with a request timeout', (adapter) => {
  it('refuses an upload still coming when the request timeout is up, keeping nothing', async () => {
    // 1,000 bytes every 20 ms: 50 KB/s, above the default minimum rate and never idle, but the
    // whole body would take over a second.
    await expectTrickleRefused(adapter, 1000, 20, {
      code: 'timeout',
      message: expect.stringMatching(/within 400 ms/),
    });
  });

  it('takes an upload that is whole in time', async () => {
    await expectWholeUploadTaken(adapter);
  });
});

describe.each(guardedAdapters({ minBytesPerSecond: 4000, rateWindowMs: 500 }))(
  '$name with a minimum upload rate',
  (adapter) => {
    it('refuses an upload that trickles in under the rate though never idle, keeping nothing', async () => {
      // 100 bytes every 50 ms: 2,000 bytes/s, never silent for long, half the rate asked for.
      await expectTrickleRefused(adapter, 100, 50, { code: 'timeout' });
    });

    it('takes an upload that keeps above the rate', async () => {
      await expectWholeUploadTaken(adapter);
    });
  },
);
