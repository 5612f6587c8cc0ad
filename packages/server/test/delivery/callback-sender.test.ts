/**
 * The sender alone, against servers on 127.0.0.1: the request it makes, and how each way a
 * receiver can fail (no answer, a stalled answer, a reset, a stalled upload, nothing listening)
 * becomes an attempt. No store is involved.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CANCELLED, CallbackSender, type CallbackSenderOptions } from '../../src/delivery/index.ts';
import type { OutgoingCallback } from '../../../mediahook/src/protocol/index.ts';
import { startUnacceptingListener } from '../../../mediahook/test/unaccepting-listener.ts';
import { jpegBytes } from './harness.ts';
import { LOOPBACK, type RecordingReceiver, startDeafServer, startRecordingReceiver } from './receivers.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function sender(options: CallbackSenderOptions = {}): CallbackSender {
  const made = new CallbackSender({ ssrf: { allowPrivate: true }, ...options });
  closers.push(() => made.close());
  return made;
}

async function receiver(script?: RecordingReceiver['script']): Promise<RecordingReceiver> {
  const made = await startRecordingReceiver({ script });
  closers.push(() => made.close());
  return made;
}

const errorCallback: OutgoingCallback = {
  family: 'B',
  event: 'error',
  status: 'error',
  id_gen: 'op-error-1',
  time_gen: '2025-01-01T00:00:00.000Z',
  message: 'the prompt was refused',
};

let dir: string;
let bigFile: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mediahook-sender-'));
  // Larger than every buffer between a sender and a receiver that does not read.
  bigFile = join(dir, 'big.jpg');
  writeFileSync(bigFile, jpegBytes(24 * 1024 * 1024));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function bigCallback(): OutgoingCallback {
  return {
    ...errorCallback,
    family: 'A',
    event: 'success',
    file: bigFile,
    mediaType: 'image/jpeg',
  } as OutgoingCallback;
}

describe('the sender', () => {
  it('refuses at construction a secret that cannot sign, rather than failing every send', () => {
    expect(() => new CallbackSender({ secrets: ['whsec_abc'] })).toThrow(/16 bytes of key/);
    expect(() => new CallbackSender({ secrets: ['nope'] })).toThrow(/starts with whsec_/);
  });
});

describe('the request', () => {
  it('says User-Agent mediahook/<package version>, with a Content-Length and no chunking', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    const r = await receiver();
    const attempt = await sender().send(r.url('op-error-1'), errorCallback);
    expect(attempt.verdict).toBe('delivered');
    const [request] = r.requests;
    expect(request?.headers['user-agent']).toBe(`mediahook/${version}`);
    expect(request?.headers['transfer-encoding']).toBeUndefined();
    expect(Number(request?.headers['content-length'])).toBeGreaterThan(0);
    expect(r.outcomes[0]?.verdict).toBe('accepted');
  });

  it('keeps the first bytes of a long answer, as many as asked', async () => {
    const r = await receiver(() => ({ status: 200, body: `ok${'x'.repeat(10_000)}` }));
    const attempt = await sender({ responseHeadBytes: 100 }).send(r.url('a'), errorCallback);
    expect(attempt).toMatchObject({ verdict: 'delivered', status_code: 200, error: null });
    expect(attempt.response_head).toBe(`ok${'x'.repeat(98)}`);
  });

  it.each([
    ['delta seconds', '7', 7_000],
    ['an HTTP date', 'Wed, 21 Oct 2099 07:28:00 GMT', Date.parse('2099-10-21T07:28:00Z')],
  ])('reads Retry-After given as %s', async (_, header, expected) => {
    const r = await receiver(() => ({ status: 503, headers: { 'retry-after': header } }));
    const before = Date.now();
    const attempt = await sender().send(r.url('a'), errorCallback);
    expect(attempt.verdict).toBe('retry');
    const wanted = expected > 1e12 ? expected - before : expected;
    expect(Math.abs(attempt.retry_after_ms! - wanted)).toBeLessThan(2_000);
  });

  it('ignores Retry-After on a success', async () => {
    const r = await receiver(() => ({ status: 202, headers: { 'retry-after': '30' } }));
    const attempt = await sender().send(r.url('a'), errorCallback);
    expect(attempt).toMatchObject({ verdict: 'delivered', status_code: 202, retry_after_ms: null });
  });
});

describe('failures without an answer', () => {
  it('gives up on an answer that does not come within responseTimeoutMs', async () => {
    const r = await receiver(() => 'hang');
    const attempt = await sender({ responseTimeoutMs: 300 }).send(r.url('a'), errorCallback);
    expect(attempt).toMatchObject({ verdict: 'retry', status_code: null });
    expect(attempt.error).toMatch(/^response_timeout: no answer within the limit after \d+ of \d+ bytes$/);
    expect(attempt.duration_ms).toBeGreaterThanOrEqual(250);
    expect(attempt.duration_ms).toBeLessThan(3_000);
  });

  it('says so when the receiver drops the connection', async () => {
    const r = await receiver(() => 'reset');
    const attempt = await sender().send(r.url('a'), errorCallback);
    expect(attempt).toMatchObject({ verdict: 'retry', status_code: null });
    expect(attempt.error).toMatch(/^connection_reset: /);
  });

  it('says so when the receiver drops the connection in the middle of the upload', async () => {
    const dropping = await startDeafServer({ resetAfterBytes: 64 * 1024 });
    closers.push(() => dropping.close());
    const attempt = await sender().send(`http://${LOOPBACK}:${dropping.port}/hook`, bigCallback());
    expect(attempt).toMatchObject({ verdict: 'retry', status_code: null });
    expect(attempt.error).toMatch(/^connection_reset: .* after \d+ of 25166\d{3} bytes$/);
  });

  it('calls a failed TLS handshake tls_error, on one line: a self-signed certificate, a plain HTTP port', async () => {
    const plain = await receiver();
    const toPlain = await sender().send(plain.url('a').replace(/^http:/, 'https:'), errorCallback);
    expect(toPlain).toMatchObject({ verdict: 'retry', status_code: null });
    expect(toPlain.error).toMatch(/^tls_error: ERR_SSL_[A-Z_]+ \([^\n]+\) after 0 of \d+ bytes$/);

    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        `subjectAltName=IP:${LOOPBACK}`,
        '-days',
        '1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
    const tls = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (_, res) =>
      res.end('ok'),
    );
    await new Promise<void>((resolve) => tls.listen(0, LOOPBACK, resolve));
    closers.push(() => new Promise((resolve) => tls.close(() => resolve())));
    const { port } = tls.address() as AddressInfo;
    const selfSigned = await sender().send(`https://${LOOPBACK}:${port}/hook`, errorCallback);
    expect(selfSigned).toMatchObject({ verdict: 'retry', status_code: null });
    expect(selfSigned.error).toMatch(
      /^tls_error: DEPTH_ZERO_SELF_SIGNED_CERT \(self[- ]signed certificate\)/,
    );
  });

  it('says so when nothing listens', async () => {
    // A port that was just free: listen, note it, close.
    const probe = createNetServer();
    await new Promise<void>((resolve) => probe.listen(0, LOOPBACK, resolve));
    const { port } = probe.address() as { port: number };
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const attempt = await sender().send(`http://${LOOPBACK}:${port}/hook`, errorCallback);
    expect(attempt).toMatchObject({ verdict: 'retry', status_code: null });
    expect(attempt.error).toMatch(/^connection_refused: /);
  });

  it('gives up on a connect that does not complete within connectTimeoutMs, having sent nothing', async () => {
    const listener = await startUnacceptingListener();
    closers.push(() => listener.close());
    const attempt = await sender({ connectTimeoutMs: 300 }).send(`${listener.origin}/hook`, errorCallback);
    expect(attempt).toMatchObject({ verdict: 'retry', status_code: null, response_head: null });
    expect(attempt.error).toMatch(/^connect_timeout: no connection within the limit/);
    // Held to the limit, not to undici's half-second clock, which gave up after about 1 s.
    expect(attempt.duration_ms).toBeGreaterThanOrEqual(250);
    expect(attempt.duration_ms).toBeLessThan(700);
  });

  it('frees the slot of a receiver that stops reading the upload (minimum rate)', async () => {
    const deaf = await startDeafServer();
    closers.push(() => deaf.close());
    // The response timeout is far off: only the rate check can end this attempt soon.
    const attempt = await sender({
      responseTimeoutMs: 60_000,
      uploadStallWindowMs: 300,
      minUploadBytesPerSecond: 1024 * 1024,
    }).send(`http://${LOOPBACK}:${deaf.port}/hook`, bigCallback());
    expect(attempt).toMatchObject({ verdict: 'retry', status_code: null });
    expect(attempt.error).toMatch(
      /^upload_stalled: fewer than 1048576 B\/s for 0\.3 s after \d+ of \d+ bytes$/,
    );
    expect(attempt.duration_ms).toBeLessThan(5_000);
  });

  it('frees the slot of a receiver that stops reading the upload (pause longer than the response timeout)', async () => {
    const deaf = await startDeafServer();
    closers.push(() => deaf.close());
    const attempt = await sender({ responseTimeoutMs: 400 }).send(
      `http://${LOOPBACK}:${deaf.port}/hook`,
      bigCallback(),
    );
    expect(attempt).toMatchObject({ verdict: 'retry', status_code: null });
    expect(attempt.error).toMatch(/^response_timeout: /);
    const sent = Number(/after (\d+) of/.exec(attempt.error ?? '')?.[1]);
    expect(sent).toBeLessThan(24 * 1024 * 1024);
    expect(attempt.duration_ms).toBeLessThan(5_000);
  });

  it('waits for a receiver that reads slowly but steadily, though the body is all written', async () => {
    // Reads 256 KiB a second, answers 200 once the whole body is in: the kernel takes the
    // 1 MiB body at once, and the reading goes on for about four seconds after that.
    const sockets = new Set<Socket>();
    const slow = createNetServer((socket) => {
      sockets.add(socket);
      socket.pause();
      let head = '';
      let bodyLeft = -1;
      const timer = setInterval(() => {
        const chunk = socket.read(64 * 1024) ?? socket.read();
        if (chunk === null) return;
        if (bodyLeft < 0) {
          head += chunk.toString('latin1');
          const end = head.indexOf('\r\n\r\n');
          if (end < 0) return;
          const length = Number(/content-length: (\d+)/i.exec(head)?.[1]);
          bodyLeft = length - (head.length - end - 4);
        } else {
          bodyLeft -= chunk.length;
        }
        if (bodyLeft <= 0) {
          clearInterval(timer);
          socket.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
        }
      }, 250);
      socket.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((resolve) => slow.listen(0, LOOPBACK, resolve));
    closers.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => slow.close(() => resolve()));
    });
    const file = join(dir, 'one-mib.jpg');
    writeFileSync(file, jpegBytes(1024 * 1024));
    const attempt = await sender({
      responseTimeoutMs: 1_000,
      minUploadBytesPerSecond: 128 * 1024,
      uploadStallWindowMs: 1_000,
    }).send(`http://${LOOPBACK}:${(slow.address() as AddressInfo).port}/hook`, {
      ...bigCallback(),
      file,
    } as OutgoingCallback);
    expect(attempt).toMatchObject({ verdict: 'delivered', status_code: 200, error: null });
    expect(attempt.duration_ms).toBeGreaterThan(2_000);
  });

  it('ends a request at once when its signal is aborted', async () => {
    const r = await receiver(() => 'hang');
    const cancel = new AbortController();
    const sending = sender().send(r.url('a'), errorCallback, cancel.signal);
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => r.requests.length > 0 && (clearInterval(poll), resolve()), 10);
    });
    cancel.abort();
    const attempt = await sending;
    expect(attempt.verdict).toBe('retry');
    expect(attempt.error?.startsWith(CANCELLED)).toBe(true);
    expect(attempt.duration_ms).toBeLessThan(1_000);
  });
});

describe('answers that are not a plain success', () => {
  it('takes the final answer after an interim one (103 Early Hints), and waits for it', async () => {
    const early = createHttpServer((req, res) => {
      req.resume();
      req.once('end', () => {
        res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
        // Only `final` requests get a real answer; the others stop at the interim one.
        if (req.url === '/final') res.writeHead(201, { 'content-type': 'text/plain' }).end('created');
      });
    });
    await new Promise<void>((resolve) => early.listen(0, LOOPBACK, resolve));
    closers.push(async () => {
      early.closeAllConnections();
      await new Promise<void>((resolve) => early.close(() => resolve()));
    });
    const { port } = early.address() as { port: number };
    const s = sender({ responseTimeoutMs: 300 });
    const final = await s.send(`http://${LOOPBACK}:${port}/final`, errorCallback);
    expect(final).toMatchObject({ verdict: 'delivered', status_code: 201, response_head: 'created' });
    const interimOnly = await s.send(`http://${LOOPBACK}:${port}/interim-only`, errorCallback);
    expect(interimOnly).toMatchObject({ verdict: 'retry', status_code: null });
    expect(interimOnly.error).toMatch(/^response_timeout: /);
  });

  it('names a 100 Continue it did not ask for, rather than calling it a reset', async () => {
    const eager = createHttpServer((req, res) => {
      res.writeContinue();
      req.resume();
      req.once('end', () => res.writeHead(200).end());
    });
    await new Promise<void>((resolve) => eager.listen(0, LOOPBACK, resolve));
    closers.push(async () => {
      eager.closeAllConnections();
      await new Promise<void>((resolve) => eager.close(() => resolve()));
    });
    const { port } = eager.address() as AddressInfo;
    const attempt = await sender().send(`http://${LOOPBACK}:${port}/hook`, errorCallback);
    expect(attempt).toMatchObject({ verdict: 'retry', status_code: null });
    expect(attempt.error).toMatch(/^bad_response: an interim 100 Continue/);
  });

  it('goes on sending after an answer cut off at the bytes it keeps', async () => {
    const r = await receiver(() => ({ status: 500, body: 'e'.repeat(50_000) }));
    const s = sender({ responseHeadBytes: 10 });
    for (const id of ['a', 'b', 'c']) {
      const attempt = await s.send(r.url(id), errorCallback);
      expect(attempt).toMatchObject({ verdict: 'retry', status_code: 500, response_head: 'e'.repeat(10) });
    }
    expect(r.requests).toHaveLength(3);
  });

  it('counts a 2xx whose body then stalls as delivered, keeping what came', async () => {
    // Announces 100 bytes, sends 7, then nothing: the answer's body stalls.
    const stalling = await receiver(() => ({
      status: 200,
      headers: { 'content-length': '100' },
      body: 'partial',
    }));
    const attempt = await sender({ responseTimeoutMs: 300 }).send(stalling.url('a'), errorCallback);
    expect(attempt).toMatchObject({ verdict: 'delivered', status_code: 200 });
    expect(attempt.response_head).toBe('partial');
  });

  it('settles by the status once the answer has had its time, however its bytes trickle', async () => {
    // Each byte well within the body timeout, yet 1 KiB of them would take minutes.
    const open = new Set<Socket>();
    const trickling = createNetServer((socket) => {
      open.add(socket);
      socket.on('error', () => {});
      socket.once('data', () => {
        socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n');
        const drip = setInterval(() => socket.write('x'), 100);
        socket.on('close', () => clearInterval(drip));
      });
    });
    await new Promise<void>((resolve) => trickling.listen(0, LOOPBACK, resolve));
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          trickling.close(() => resolve());
          for (const socket of open) socket.destroy();
        }),
    );
    const { port } = trickling.address() as AddressInfo;
    const attempt = await sender({ responseTimeoutMs: 1_000 }).send(
      `http://${LOOPBACK}:${port}/hook`,
      errorCallback,
    );
    expect(attempt).toMatchObject({ verdict: 'delivered', status_code: 200 });
    expect(attempt.duration_ms).toBeLessThan(5_000);
    expect(attempt.response_head).toMatch(/^x+$/);
  });

  it('shows no answer for an answer without a body', async () => {
    const r = await receiver(() => ({ status: 204 }));
    const attempt = await sender().send(r.url('a'), errorCallback);
    expect(attempt).toMatchObject({ verdict: 'delivered', status_code: 204, response_head: null });
  });

  it('measures the upload rate from the upload on, not from before the connection', async () => {
    const r = await receiver();
    // The name takes longer to resolve than the rate's whole window: no upload has begun yet.
    const slowResolver = async () => {
      await new Promise((resolve) => setTimeout(resolve, 400));
      return [{ address: LOOPBACK, family: 4 }];
    };
    const s = sender({ uploadStallWindowMs: 100, guard: { resolver: slowResolver } });
    const attempt = await s.send(`http://callback.test:${r.port}/hook`, errorCallback);
    expect(attempt).toMatchObject({ verdict: 'delivered', status_code: 200, error: null });
  });

  it('does not follow a redirect and says why it retries', async () => {
    const target = await receiver();
    const r = await receiver(() => ({ status: 307, headers: { location: target.url('b') } }));
    const attempt = await sender().send(r.url('a'), errorCallback);
    expect(attempt).toMatchObject({ verdict: 'retry', status_code: 307 });
    expect(attempt.error).toBe(`redirect not followed (Location: ${target.url('b')})`);
    expect(target.connections).toBe(0);
  });

  it('retries a 304 without calling it a redirect', async () => {
    const r = await receiver(() => ({ status: 304 }));
    const attempt = await sender().send(r.url('a'), errorCallback);
    expect(attempt).toMatchObject({ verdict: 'retry', status_code: 304, error: null });
  });

  it('refuses localhost under the default policy without dialling', async () => {
    const r = await receiver();
    const attempt = await new CallbackSender().send(`http://localhost:${r.port}/hook`, errorCallback);
    expect(attempt).toMatchObject({ verdict: 'refused', status_code: null });
    expect(attempt.error).toMatch(/^refused by the SSRF guard: localhost is loopback/);
    expect(r.connections).toBe(0);
  });
});
