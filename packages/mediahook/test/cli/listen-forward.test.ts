/**
 * `listen --forward-to`: each accepted callback goes on to the app byte-exact, and the sender
 * gets the app's answer; refused and forged callbacks never reach the app.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { describe, expect, it, onTestFinished } from 'vitest';
import { encodeCallback, SignatureVerifier } from '../../src/protocol/index.ts';
import { forwardingPerTest, jpegCallback, sendCallback, WEBHOOK_HEADERS } from './forward-helpers.ts';
import { closedPort, jpegBytes, runCli } from './helpers.ts';
import { startListen } from './listen-helpers.ts';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const FORWARD_SECRET = 'whsec_QXBwU2VjcmV0Rm9yVGhlTG9jYWxBcHAx';

describe('mediahook listen --forward-to', () => {
  const t = forwardingPerTest('mediahook-forward-');

  it('sends the same body bytes and headers on, with a User-Agent of its own', async () => {
    t.listener = await startListen(['--out', t.out, '--json', '--forward-to', t.app.url]);
    const sent = await sendCallback(t.listener.url, jpegCallback('op-1'), { secret: SECRET });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ received: true, id_gen: 'op-1' });
    expect(t.app.requests).toHaveLength(1);
    const got = t.app.requests[0]!;
    expect(got.url).toBe('/webhooks');
    expect(got.sha256).toBe(sent.sha256);
    expect(got.headers['content-type']).toBe(sent.headers['content-type']);
    for (const name of WEBHOOK_HEADERS) expect(got.headers[name]).toBe(sent.headers[name]);
    expect(got.headers['user-agent']).toMatch(/^mediahook\/\d/);
    const [line] = await t.listener.waitForLines(1);
    const record = JSON.parse(line!);
    expect(record).toMatchObject({ event: 'success', id_gen: 'op-1', forward: { status: 200 } });
    expect(record.forward.ms).toBeGreaterThanOrEqual(0);
    // A repeat is forwarded too: the app's own idempotency is what it is there to try.
    const again = await sendCallback(t.listener.url, jpegCallback('op-1'), { secret: SECRET });
    expect(again.body).toMatchObject({ received: true, duplicate: true });
    expect(t.app.requests.map((r) => r.sha256)).toEqual([sent.sha256, again.sha256]);
    const repeat = JSON.parse((await t.listener.waitForLines(2))[1]!);
    expect(repeat).toMatchObject({ duplicate: true, forward: { status: 200 } });
  });

  it("answers the sender with the app's 500, its JSON error passed on", async () => {
    t.listener = await startListen(['--out', t.out, '--json', '--forward-to', t.app.url]);
    t.app.answer = {
      status: 500,
      body: '{"error":{"code":"db_down","message":"no database"}}',
      type: 'application/json',
    };
    const sent = await sendCallback(t.listener.url, jpegCallback('op-2'));
    expect(sent.status).toBe(500);
    expect(sent.body).toEqual({ error: { code: 'db_down', message: 'no database' } });
    t.app.answer = { status: 404, body: 'no such route', type: 'text/plain' };
    const other = await sendCallback(t.listener.url, jpegCallback('op-3'));
    expect(other.status).toBe(500);
    expect(other.body.error.code).toBe('forward_refused');
    const lines = await t.listener.waitForLines(2);
    expect(lines.map((line) => JSON.parse(line).forward.status)).toEqual([500, 404]);
  });

  it('answers 500 forward_failed when the app is down', async () => {
    const down = `http://127.0.0.1:${await closedPort()}/webhooks`;
    t.listener = await startListen(['--out', t.out, '--json', '--forward-to', down]);
    const sent = await sendCallback(t.listener.url, jpegCallback('op-4'));
    expect(sent.status).toBe(500);
    expect(sent.body.error.code).toBe('forward_failed');
    expect(sent.body.error.message).toMatch(/connection refused/);
    const [line] = await t.listener.waitForLines(1);
    expect(JSON.parse(line!).forward).toMatchObject({ status: null, code: 'forward_failed' });
    // The callback itself was received and stored: the sender's retry finds it a duplicate.
    expect((await readdir(t.out)).filter((name) => name.endsWith('.jpg'))).toEqual(['op-4.jpg']);
  });

  it('answers 500 forward_failed when the app does not answer within --forward-timeout', async () => {
    // An app that takes the body and never answers.
    const silent = createServer((req) => req.resume());
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => {
      silent.closeAllConnections();
      silent.close();
    });
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`;
    t.listener = await startListen(['--out', t.out, '--forward-to', url, '--forward-timeout', '500ms']);
    const sent = await sendCallback(t.listener.url, jpegCallback('op-slow'));
    expect(sent.status).toBe(500);
    expect(sent.body.error).toMatchObject({ code: 'forward_failed' });
    expect(sent.body.error.message).toMatch(/no answer within 500ms/);
    const [line] = await t.listener.waitForLines(1);
    expect(line).toMatch(/ accepted .*id_gen=op-slow.* → app forward_failed \(\d+ ms\)$/);
  });

  it('sends a callback that comes back to it no further: forward_loop, not a loop', async () => {
    // Forwarding to itself: its port is known once it listens, so a relay app in between
    // passes the requests back to it, as a mistaken --forward-to would.
    let back = '';
    const relay = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        void request(back, { method: 'POST', headers: req.headers, body: Buffer.concat(chunks) }).then(
          async (answer) => {
            res.writeHead(answer.statusCode, { 'content-type': 'application/json' });
            res.end(await answer.body.text());
          },
        );
      });
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => {
      relay.closeAllConnections();
      relay.close();
    });
    const url = `http://127.0.0.1:${(relay.address() as AddressInfo).port}/`;
    t.listener = await startListen(['--out', t.out, '--json', '--forward-to', url]);
    back = t.listener.url;
    const sent = await sendCallback(t.listener.url, jpegCallback('op-loop'));
    expect(sent.status).toBe(500);
    expect(sent.body.error.code).toBe('forward_loop');
    const records = (await t.listener.waitForLines(2)).map((line) => JSON.parse(line));
    expect(records.map((r) => [r.duplicate, r.forward.status, r.forward.code ?? null])).toEqual([
      [true, null, 'forward_loop'],
      [false, 500, null],
    ]);
  });

  it('answers a refused callback itself, and forwards nothing', async () => {
    t.listener = await startListen(['--out', t.out, '--json', '--forward-to', t.app.url, '--secret', SECRET]);
    const unsigned = await sendCallback(t.listener.url, jpegCallback('op-5'));
    expect(unsigned.status).toBe(500);
    expect(unsigned.body.error.code).toBe('bad_signature');
    const response = await request(t.listener.url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'not a callback',
    });
    expect(response.statusCode).toBe(500);
    await response.body.dump();
    const lines = await t.listener.waitForLines(2);
    expect(lines.map((line) => JSON.parse(line).event)).toEqual(['rejected', 'rejected']);
    expect(lines.every((line) => !('forward' in JSON.parse(line)))).toBe(true);
    expect(t.app.requests).toEqual([]);
    // Refused on their headers, their bodies were never read: no raw copy was begun.
    expect(await readdir(t.out)).not.toContain('.requests');
  });

  it('refuses --forward-secret without --secret: exit 2, nothing listens', async () => {
    const run = await runCli([
      'listen',
      '--port',
      '0',
      '--out',
      t.out,
      '--forward-to',
      t.app.url,
      '--forward-secret',
      FORWARD_SECRET,
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--forward-secret needs --secret/);
  });

  it('never forwards nor signs again a forged callback, and re-signs a verified one', async () => {
    t.listener = await startListen([
      ...['--out', t.out, '--json', '--forward-to', t.app.url],
      ...['--secret', SECRET, '--forward-secret', FORWARD_SECRET],
    ]);
    const forged = await sendCallback(t.listener.url, jpegCallback('op-6'), { secret: SECRET, tamper: true });
    expect(forged.status).toBe(500);
    expect(forged.body.error.code).toBe('bad_signature');
    expect(t.app.requests).toEqual([]);

    const sent = await sendCallback(t.listener.url, jpegCallback('op-7'), { secret: SECRET });
    expect(sent.status).toBe(200);
    expect(t.app.requests).toHaveLength(1);
    const got = t.app.requests[0]!;
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
    t.listener = await startListen([
      '--out',
      t.out,
      '--json',
      '--forward-to',
      t.app.url,
      '--keep-requests',
      '0',
    ]);
    const size = 256 * 1024 * 1024;
    const chunk = jpegBytes(1024 * 1024);
    async function* file() {
      for (let sent = 0; sent < size; sent += chunk.length) yield chunk;
    }
    const encoded = await encodeCallback({
      ...jpegCallback('op-big'),
      file: { stream: Readable.from(file()), size },
    });
    const hash = createHash('sha256');
    async function* body() {
      for await (const part of encoded.body()) {
        hash.update(part);
        yield part;
      }
    }
    // A first large callback starts what any one does (the hashing thread, the buffers), so
    // that what the 256 MiB one adds is measured alone.
    expect((await sendCallback(t.listener.url, jpegCallback('op-warm', 4 * 1024 * 1024))).status).toBe(200);
    const pid = t.listener.child.pid!;
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
      const response = await request(t.listener.url, {
        method: 'POST',
        headers: { 'content-type': encoded.contentType, 'content-length': String(encoded.contentLength) },
        body: Readable.from(body()),
      });
      expect(response.statusCode).toBe(200);
      await response.body.dump();
    } finally {
      clearInterval(sampler);
    }
    expect(t.app.requests).toHaveLength(2);
    expect(t.app.requests[1]!.bytes).toBe(encoded.contentLength);
    expect(t.app.requests[1]!.sha256).toBe(hash.digest('hex'));
    expect(peak - before).toBeLessThanOrEqual(64 * 1024 * 1024);
    // Nothing kept: the copy it forwarded from is gone.
    expect(await readdir(join(t.out, '.requests'))).toEqual([]);
  });
});
