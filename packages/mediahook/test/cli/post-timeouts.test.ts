/**
 * postCallback's timers: the connect timeout held to its limit, and the response timeout that
 * watches an upload the receiver stops reading and the wait for the status, but neither a
 * slow source nor a receiver that reads slowly and steadily. Receivers on loopback only.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startUnacceptingListener } from '../unaccepting-listener.ts';
import { afterHead, closeAll, failureOf, MiB, post, serve, serveRaw, text, zeros } from './post-helpers.ts';

afterEach(closeAll);

describe('postCallback: timeouts', () => {
  it('gives up connecting at the limit, before reading any of the body', async () => {
    const listener = await startUnacceptingListener();
    try {
      let read = false;
      const body = {
        ...text('x'),
        async *body() {
          read = true;
          yield Buffer.from('x');
        },
      };
      const started = performance.now();
      const error = await failureOf(
        post(new URL(`${listener.origin}/hook`), body, { connectTimeoutMs: 300 }),
      );
      const elapsed = performance.now() - started;
      expect(error).toMatchObject({
        code: 'connect_timeout',
        bytesSent: 0,
        unreachable: true,
        timedOut: true,
      });
      expect(error.message).toBe(`could not connect to 127.0.0.1:${listener.port} within 300ms`);
      expect(elapsed).toBeGreaterThanOrEqual(295);
      expect(elapsed).toBeLessThan(1000);
      expect(read).toBe(false);
    } finally {
      await listener.close();
    }
  });

  it('gives up on a receiver that stops reading the body', async () => {
    const url = await serve((req) => req.pause());
    const error = await failureOf(post(url, zeros(64 * MiB), { responseTimeoutMs: 300 }));
    expect(error).toMatchObject({ code: 'upload_stalled', unreachable: false, timedOut: true });
    expect(error.message).toMatch(
      /^the receiver stopped reading the body for 300ms \(.+ of 64\.0 MiB sent\)$/,
    );
    expect(error.bytesSent).toBeLessThan(64 * MiB);
  });

  it('gives up when no answer comes after the body', async () => {
    const url = await serve((req) => req.resume());
    const error = await failureOf(post(url, text('x'), { responseTimeoutMs: 300 }));
    expect(error).toMatchObject({ code: 'response_timeout', bytesSent: 1, timedOut: true });
    expect(error.message).toBe('no answer within 300ms after the body was sent');
  });

  it('tells an answer that began but whose headers never ended', async () => {
    const url = await serveRaw((socket) =>
      afterHead(socket, () => socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n')),
    );
    const error = await failureOf(post(url, text('x'), { responseTimeoutMs: 300 }));
    expect(error).toMatchObject({ code: 'answer_stalled', timedOut: true });
    expect(error.message).toBe(
      'the answer stalled: its headers were incomplete 300ms after the body was sent',
    );
  });

  it('waits for a slow source: the receiver is not to blame', async () => {
    const url = await serve((req, res) => req.resume().on('end', () => res.end('ok')));
    const slow = {
      ...zeros(3),
      async *body() {
        for (let i = 0; i < 3; i++) {
          await sleep(250);
          yield Buffer.from('x');
        }
      },
    };
    const result = await post(url, slow, { responseTimeoutMs: 100 });
    expect(result).toMatchObject({ statusCode: 200, bytesSent: 3 });
  });

  it('waits for a receiver that reads slowly but steadily', async () => {
    // 50 ms of pause per MiB read: 2 s for the upload, each wait well within the 1 s timeout.
    const url = await serve((req, res) => {
      let bytes = 0;
      req.on('data', (chunk: Buffer) => {
        const before = Math.floor(bytes / MiB);
        bytes += chunk.length;
        if (Math.floor(bytes / MiB) === before) return;
        req.pause();
        setTimeout(() => req.resume(), 50);
      });
      req.on('end', () => res.end(String(bytes)));
    });
    const result = await post(url, zeros(40 * MiB), { responseTimeoutMs: 1000 });
    expect(result.statusCode).toBe(200);
    expect(result.body.toString()).toBe(String(40 * MiB));
  });

  it('waits through interim 1xx answers for the status', async () => {
    const url = await serve((req, res) => {
      req.resume().on('end', async () => {
        for (let i = 0; i < 4; i++) {
          res.writeProcessing();
          await sleep(150);
        }
        res.end('done');
      });
    });
    const result = await post(url, text('x'), { responseTimeoutMs: 300 });
    expect(result.statusCode).toBe(200);
    expect(result.body.toString()).toBe('done');
  });

  it('reads a body that stops coming for one timeout past its status, keeping the status', async () => {
    const url = await serve((req, res) => {
      req.resume().on('end', () => res.writeHead(200, { 'content-length': '10' }).write('half'));
    });
    const result = await post(url, text('x'), { responseTimeoutMs: 300 });
    expect(result).toMatchObject({ statusCode: 200, bodyLate: true, bodyCut: false });
    expect(result.body.toString()).toBe('half');
  });
});

describe('postCallback: a body that breaks its Content-Length', () => {
  it.each([
    { yields: 20, message: 'the body is longer than its 10 bytes' },
    { yields: 5, message: 'the body ended at 5 of its 10 bytes' },
  ])('fails when the source yields $yields of 10 bytes', async ({ yields, message }) => {
    const url = await serve((req, res) => req.resume().on('end', () => res.end()));
    const body = {
      ...text('x'),
      contentLength: 10,
      async *body() {
        yield Buffer.alloc(yields);
      },
    };
    const error = await failureOf(post(url, body));
    expect(error).toMatchObject({ code: 'body_length_mismatch', message, timedOut: false });
  });
});
