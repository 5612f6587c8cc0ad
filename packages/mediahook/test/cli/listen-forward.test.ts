/**
 * `listen --forward-to`: each accepted callback goes on to the app byte-exact, and the sender
 * gets the app's answer; refused and forged callbacks never reach the app.
 */
import { createHash } from 'node:crypto';
import { readFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeCallback, SignatureVerifier } from '../../src/protocol/index.ts';
import { type App, sendCallback, startApp } from './forward-helpers.ts';
import { closedPort, jpegBytes, runCli } from './helpers.ts';
import { type Listener, startListen } from './listen-helpers.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const FORWARD_SECRET = 'whsec_QXBwU2VjcmV0Rm9yVGhlTG9jYWxBcHAx';
const WEBHOOK_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;
const common = { family: 'A', status: 'success', time_gen: '2026-11-28T10:00:00.000Z' } as const;

const success = (id: string, bytes = 3000) =>
  ({ ...common, event: 'success', id_gen: id, file: jpegBytes(bytes), mediaType: 'image/jpeg' }) as const;

describe('mediahook listen --forward-to', () => {
  let out: string;
  let app: App;
  let listener: Listener | undefined;

  beforeEach(async () => {
    out = await mkdtemp(join(tmpdir(), 'mediahook-forward-'));
    app = await startApp();
  });
  afterEach(async () => {
    await listener?.stop();
    listener = undefined;
    await app.close();
    await rm(out, { recursive: true, force: true });
  });

  it('sends the same body bytes and headers on, with a User-Agent of its own', async () => {
    listener = await startListen(['--out', out, '--json', '--forward-to', app.url]);
    const sent = await sendCallback(listener.url, success('op-1'), { secret: SECRET });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ received: true, id_gen: 'op-1' });
    expect(app.requests).toHaveLength(1);
    const got = app.requests[0]!;
    expect(got.url).toBe('/webhooks');
    expect(got.sha256).toBe(sent.sha256);
    expect(got.headers['content-type']).toBe(sent.headers['content-type']);
    for (const name of WEBHOOK_HEADERS) expect(got.headers[name]).toBe(sent.headers[name]);
    expect(got.headers['user-agent']).toMatch(/^mediahook\/\d/);
    const [line] = await listener.waitForLines(1);
    const record = JSON.parse(line!);
    expect(record).toMatchObject({ event: 'success', id_gen: 'op-1', forward: { status: 200 } });
    expect(record.forward.ms).toBeGreaterThanOrEqual(0);
  });

  it("answers the sender with the app's 500, its JSON error passed on", async () => {
    listener = await startListen(['--out', out, '--json', '--forward-to', app.url]);
    app.answer = {
      status: 500,
      body: '{"error":{"code":"db_down","message":"no database"}}',
      type: 'application/json',
    };
    const sent = await sendCallback(listener.url, success('op-2'));
    expect(sent.status).toBe(500);
    expect(sent.body).toEqual({ error: { code: 'db_down', message: 'no database' } });
    app.answer = { status: 404, body: 'no such route', type: 'text/plain' };
    const other = await sendCallback(listener.url, success('op-3'));
    expect(other.status).toBe(500);
    expect(other.body.error.code).toBe('forward_refused');
    const lines = await listener.waitForLines(2);
    expect(lines.map((line) => JSON.parse(line).forward.status)).toEqual([500, 404]);
  });

  it('answers 500 forward_failed when the app is down', async () => {
    const down = `http://127.0.0.1:${await closedPort()}/webhooks`;
    listener = await startListen(['--out', out, '--json', '--forward-to', down]);
    const sent = await sendCallback(listener.url, success('op-4'));
    expect(sent.status).toBe(500);
    expect(sent.body.error.code).toBe('forward_failed');
    expect(sent.body.error.message).toMatch(/connection refused/);
    const [line] = await listener.waitForLines(1);
    expect(JSON.parse(line!).forward).toMatchObject({ status: null, code: 'forward_failed' });
    // The callback itself was received and stored: the sender's retry finds it a duplicate.
    expect((await readdir(out)).filter((name) => name.endsWith('.jpg'))).toEqual(['op-4.jpg']);
  });

  it('answers a refused callback itself, and forwards nothing', async () => {
    listener = await startListen(['--out', out, '--json', '--forward-to', app.url, '--secret', SECRET]);
    const unsigned = await sendCallback(listener.url, success('op-5'));
    expect(unsigned.status).toBe(500);
    expect(unsigned.body.error.code).toBe('bad_signature');
    const response = await request(listener.url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'not a callback',
    });
    expect(response.statusCode).toBe(500);
    await response.body.dump();
    const lines = await listener.waitForLines(2);
    expect(lines.map((line) => JSON.parse(line).event)).toEqual(['rejected', 'rejected']);
    expect(lines.every((line) => !('forward' in JSON.parse(line)))).toBe(true);
    expect(app.requests).toEqual([]);
    expect(await readdir(join(out, '.requests'))).toEqual([]);
  });

  it('refuses --forward-secret without --secret: exit 2, nothing listens', async () => {
    const run = await runCli([
      'listen',
      '--port',
      '0',
      '--out',
      out,
      '--forward-to',
      app.url,
      '--forward-secret',
      FORWARD_SECRET,
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--forward-secret needs --secret/);
  });

  it('never forwards nor signs again a forged callback, and re-signs a verified one', async () => {
    listener = await startListen([
      ...['--out', out, '--json', '--forward-to', app.url],
      ...['--secret', SECRET, '--forward-secret', FORWARD_SECRET],
    ]);
    const forged = await sendCallback(listener.url, success('op-6'), { secret: SECRET, tamper: true });
    expect(forged.status).toBe(500);
    expect(forged.body.error.code).toBe('bad_signature');
    expect(app.requests).toEqual([]);

    const sent = await sendCallback(listener.url, success('op-7'), { secret: SECRET });
    expect(sent.status).toBe(200);
    expect(app.requests).toHaveLength(1);
    const got = app.requests[0]!;
    expect(got.sha256).toBe(sent.sha256);
    expect(got.headers['webhook-id']).toBe('op-7');
    expect(got.headers['webhook-signature']).not.toBe(sent.headers['webhook-signature']);
    const header = (name: string) => got.headers[name] as string | undefined;
    const atApp = new SignatureVerifier([FORWARD_SECRET], header);
    atApp.update(got.body!);
    expect(() => atApp.verify()).not.toThrow();
    const withSender = new SignatureVerifier([SECRET], header);
    withSender.update(got.body!);
    expect(() => withSender.verify()).toThrow();
  });

  it('forwards a 256 MiB callback byte-exact with flat memory', async () => {
    listener = await startListen(['--out', out, '--json', '--forward-to', app.url, '--keep-requests', '0']);
    const size = 256 * 1024 * 1024;
    const chunk = jpegBytes(1024 * 1024);
    async function* file() {
      for (let sent = 0; sent < size; sent += chunk.length) yield chunk;
    }
    const encoded = await encodeCallback({
      ...success('op-big'),
      file: { stream: Readable.from(file()), size },
    });
    const hash = createHash('sha256');
    async function* body() {
      for await (const part of encoded.body()) {
        hash.update(part);
        yield part;
      }
    }
    const pid = listener.child.pid!;
    const rss = async () =>
      Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
    const before = await rss();
    let peak = before;
    const sampler = setInterval(
      () =>
        void rss().then(
          (now) => (peak = Math.max(peak, now)),
          () => {},
        ),
      50,
    );
    try {
      const response = await request(listener.url, {
        method: 'POST',
        headers: { 'content-type': encoded.contentType, 'content-length': String(encoded.contentLength) },
        body: Readable.from(body()),
      });
      expect(response.statusCode).toBe(200);
      await response.body.dump();
    } finally {
      clearInterval(sampler);
    }
    expect(app.requests).toHaveLength(1);
    expect(app.requests[0]!.bytes).toBe(encoded.contentLength);
    expect(app.requests[0]!.sha256).toBe(hash.digest('hex'));
    expect(peak - before).toBeLessThanOrEqual(64 * 1024 * 1024);
    // Nothing kept: the copy it forwarded from is gone.
    expect(await readdir(join(out, '.requests'))).toEqual([]);
  });
});
