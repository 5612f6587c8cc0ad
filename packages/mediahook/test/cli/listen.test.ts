import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeCallback, type OutgoingCallback } from '../../src/protocol/index.ts';
import { BIN, jpegBytes, mp4Bytes } from './helpers.ts';
import { type Listener, post, startListen } from './listen-helpers.ts';

const run = promisify(execFile);

async function eventuallyTrue(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
const sha256Hex = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const common = { status: 'success', time_gen: '2026-11-22T10:00:00.000Z' };
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('mediahook listen', () => {
  let out: string;
  let listener: Listener | undefined;

  beforeEach(async () => {
    out = await mkdtemp(join(tmpdir(), 'mediahook-listen-'));
  });
  afterEach(async () => {
    await listener?.stop();
    listener = undefined;
    await rm(out, { recursive: true, force: true });
  });

  it('prints one NDJSON record per request with the fixed field names', async () => {
    listener = await startListen(['--out', out, '--json']);
    const jpeg = jpegBytes(2000);
    expect(
      (
        await post(listener.url, {
          ...common,
          family: 'A',
          event: 'success',
          id_gen: 'op-1',
          file: jpeg,
          mediaType: 'image/jpeg',
        })
      ).status,
    ).toBe(200);
    const mp4 = mp4Bytes(5000);
    await post(listener.url, {
      ...common,
      family: 'A',
      event: 'success',
      id_gen: 'op-2',
      file: mp4,
      mediaType: 'video/mp4',
    });
    await post(listener.url, {
      ...common,
      status: 'error',
      family: 'B',
      event: 'error',
      id_gen: 'op-3',
      message: 'no GPU',
    });
    await post(listener.url, {
      ...common,
      family: 'A',
      event: 'success',
      id_gen: 'op-1',
      file: jpeg,
      mediaType: 'image/jpeg',
    });
    const bad = await request(listener.url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'hello',
    });
    expect(bad.statusCode).toBe(500);
    await bad.body.dump();

    const records = (await listener.waitForLines(5)).map((line) => JSON.parse(line));
    expect(records[0]).toEqual({
      event: 'success',
      family: 'A',
      status: 'success',
      id_gen: 'op-1',
      time_gen: common.time_gen,
      duplicate: false,
      file: {
        path: join(out, 'op-1.jpg'),
        mediaType: 'image/jpeg',
        bytes: 2000,
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      },
    });
    expect(records[1].file).toMatchObject({
      path: join(out, 'op-2.mp4'),
      mediaType: 'video/mp4',
      bytes: 5000,
    });
    expect(records[2]).toEqual({
      event: 'error',
      family: 'B',
      status: 'error',
      id_gen: 'op-3',
      time_gen: common.time_gen,
      duplicate: false,
      message: 'no GPU',
    });
    expect(records[3]).toMatchObject({ event: 'success', id_gen: 'op-1', duplicate: true });
    expect(records[4]).toEqual({ event: 'rejected', code: 'not_multipart', message: expect.any(String) });
    expect(Buffer.compare(await readFile(join(out, 'op-1.jpg')), jpeg)).toBe(0);
    expect(Buffer.compare(await readFile(join(out, 'op-2.mp4')), mp4)).toBe(0);
  });

  it('tells a duplicate as the callback stored first, whatever the copy carried', async () => {
    listener = await startListen(['--out', out, '--json']);
    const jpeg = jpegBytes(700);
    const first = { ...common, family: 'B', event: 'success', id_gen: 'op-9' } as const;
    await post(listener.url, { ...first, file: jpeg, mediaType: 'image/jpeg' });
    const copy = { ...common, family: 'A', event: 'success', id_gen: 'op-9' } as const;
    expect((await post(listener.url, { ...copy, file: mp4Bytes(900), mediaType: 'video/mp4' })).status).toBe(
      200,
    );
    const error = { ...common, family: 'A', event: 'error', id_gen: 'op-9', message: 'late' } as const;
    expect((await post(listener.url, error)).status).toBe(200);
    const records = (await listener.waitForLines(3)).map((line) => JSON.parse(line));
    const stored = {
      event: 'success',
      family: 'B',
      status: 'success',
      id_gen: 'op-9',
      time_gen: common.time_gen,
      file: { path: join(out, 'op-9.jpg'), mediaType: 'image/jpeg', bytes: 700, sha256: sha256Hex(jpeg) },
    };
    expect(records).toEqual([
      { ...stored, duplicate: false },
      { ...stored, duplicate: true },
      { ...stored, duplicate: true },
    ]);
  });

  it('answers HEAD like GET, without a body', async () => {
    listener = await startListen(['--out', out]);
    for (const path of ['/', '/requests.json']) {
      const get = await request(new URL(path, listener.url), { method: 'GET' });
      await get.body.dump();
      const head = await request(new URL(path, listener.url), { method: 'HEAD' });
      expect(head.statusCode).toBe(200);
      expect(head.headers['content-type']).toBe(get.headers['content-type']);
      expect(await head.body.text()).toBe('');
    }
    const badName = await request(new URL('/files/%ZZ.jpg', listener.url), { method: 'GET' });
    expect(badName.statusCode).toBe(404);
    expect(await badName.body.json()).toMatchObject({ error: { code: 'not_found' } });
  });

  it('prints a readable line without --json, and serves the inspector and the stored files', async () => {
    listener = await startListen(['--out', out]);
    const jpeg = jpegBytes(300);
    await post(listener.url, {
      ...common,
      family: 'B',
      event: 'success',
      id_gen: 'img-7',
      file: jpeg,
      mediaType: 'image/jpeg',
    });
    const [line] = await listener.waitForLines(1);
    expect(line).toMatch(/accepted\s+B success id_gen=img-7 status=success\s+image\/jpeg 300 B/);

    const page = await request(listener.url, { method: 'GET' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(await page.body.text()).toContain('Callbacks received');
    const list = await request(new URL('/requests.json', listener.url), { method: 'GET' });
    const requests = (await list.body.json()) as { verdict: string; callback: { file: { url: string } } }[];
    expect(requests).toHaveLength(1);
    expect(requests[0]!.verdict).toBe('accepted');
    // The page polls: a list it holds already is 304, by entity tag.
    const unchanged = await request(new URL('/requests.json', listener.url), {
      method: 'GET',
      headers: { 'if-none-match': String(list.headers['etag']) },
    });
    expect([unchanged.statusCode, await unchanged.body.text()]).toEqual([304, '']);
    const file = await request(new URL(requests[0]!.callback.file.url, listener.url), { method: 'GET' });
    expect(file.headers['content-type']).toBe('image/jpeg');
    expect(Buffer.compare(Buffer.from(await file.body.arrayBuffer()), jpeg)).toBe(0);
    for (const path of ['/files/..%2F.mediahook', '/files/.mediahook%2Freceipts', '/files/.mediahook']) {
      const traversal = await request(new URL(path, listener.url), { method: 'GET' });
      expect(traversal.statusCode, path).toBe(404);
      await traversal.body.dump();
    }
  });

  it('prints what the sender wrote without obeying it: one line per callback, controls escaped', async () => {
    const forged =
      'ok\n12:00:00.000  accepted   A success id_gen=FORGED\u001b[31m\u009b2J\u202eTXT.exe\u2028';
    for (const json of [false, true]) {
      const listener = await startListen(['--out', out, ...(json ? ['--json'] : [])]);
      try {
        await post(listener.url, {
          ...common,
          status: forged,
          family: 'A',
          event: 'error',
          id_gen: `ansi\u001b]0;x\u0007-${json}`,
          message: 'bad\r\nnews\u007f',
        });
        await listener.waitForLines(1);
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(listener.lines).toHaveLength(1);
        const line = listener.lines[0]!;
        expect(line).not.toMatch(/[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/);
        if (json) expect(JSON.parse(line)).toMatchObject({ status: forged, message: 'bad\r\nnews\u007f' });
        else
          expect(line).toContain(
            'status=ok\\x0a12:00:00.000  accepted   A success id_gen=FORGED\\x1b[31m\\x9b2J\\u202eTXT.exe\\u2028',
          );
      } finally {
        await listener.stop();
      }
    }
  });

  it('with --secret, accepts signed callbacks and rejects unsigned ones', async () => {
    listener = await startListen(['--out', out, '--json', '--secret', SECRET]);
    const callback: OutgoingCallback = {
      ...common,
      family: 'A',
      event: 'error',
      id_gen: 'sig-1',
      message: 'x',
    };
    expect((await post(listener.url, callback)).body).toEqual({
      error: { code: 'bad_signature', message: expect.any(String) },
    });
    expect((await post(listener.url, callback, SECRET)).status).toBe(200);
    const records = (await listener.waitForLines(2)).map((line) => JSON.parse(line));
    expect(records.map((record) => record.event)).toEqual(['rejected', 'error']);
  });

  it('answers a refused upload whose sender asks Expect: 100-continue before it is sent (curl)', async () => {
    listener = await startListen(['--out', out, '--json', '--secret', SECRET]);
    const file = join(out, 'clip.mp4');
    await writeFile(file, mp4Bytes(2 * 1024 * 1024));
    // curl asks Expect: 100-continue for bodies over 1 MiB; unsigned, this one is refused.
    const { stdout, stderr } = await run('/usr/bin/curl', [
      '--silent',
      '--show-error',
      '--verbose',
      '--noproxy',
      '*',
      '--max-time',
      '10',
      '-H',
      'Expect: 100-continue',
      '-F',
      'status=success',
      '-F',
      'id_gen=curl-expect',
      '-F',
      'time_gen=1700000000',
      '-F',
      `result_pv=@${file};type=video/mp4`,
      listener.url,
    ]);
    expect(stderr).toContain('Expect: 100-continue');
    expect(stderr).not.toContain('HTTP/1.1 100 Continue');
    expect(stderr).toContain('HTTP/1.1 500');
    expect(JSON.parse(stdout)).toMatchObject({ error: { code: 'bad_signature' } });
    const [record] = (await listener.waitForLines(1)).map((line) => JSON.parse(line));
    expect(record).toMatchObject({ event: 'rejected', code: 'bad_signature' });
  });

  it('takes a callback whose sender asks an expectation other than 100-continue, as RFC 9110 lets it', async () => {
    listener = await startListen(['--out', out, '--json']);
    const file = join(out, 'image.jpg');
    const bytes = jpegBytes(4096);
    await writeFile(file, bytes);
    const { stdout } = await run('/usr/bin/curl', [
      ...['--silent', '--show-error', '--noproxy', '*', '--max-time', '10', '-H', 'Expect: foo'],
      ...['-F', 'status=success', '-F', 'id_gen=curl-expect-foo', '-F', 'time_gen=1700000000'],
      ...['-F', `result_pv=@${file};type=image/jpeg`, listener.url],
    ]);
    expect(JSON.parse(stdout)).toMatchObject({ received: true, id_gen: 'curl-expect-foo' });
    const [record] = (await listener.waitForLines(1)).map((line) => JSON.parse(line));
    expect(record).toMatchObject({
      event: 'success',
      id_gen: 'curl-expect-foo',
      file: { sha256: sha256Hex(bytes) },
    });
  });

  it('answers other methods 405 and unknown pages 404, and refuses a compressed callback by name', async () => {
    listener = await startListen(['--out', out, '--json', '--min-upload-rate', '0']);
    const put = await request(listener.url, { method: 'PUT', body: 'x' });
    expect(put.statusCode).toBe(405);
    expect(put.headers.allow).toBe('GET, HEAD, POST');
    expect(await put.body.json()).toMatchObject({ error: { code: 'method_not_allowed' } });
    const missing = await request(new URL('/nowhere', listener.url), { method: 'GET' });
    expect(missing.statusCode).toBe(404);
    expect(await missing.body.json()).toMatchObject({ error: { code: 'not_found' } });

    const encoded = await encodeCallback({
      ...common,
      family: 'A',
      event: 'error',
      id_gen: 'gz',
      message: 'x',
    });
    const chunks: Buffer[] = [];
    for await (const chunk of encoded.body()) chunks.push(chunk);
    const gzipped = await request(listener.url, {
      method: 'POST',
      body: gzipSync(Buffer.concat(chunks)),
      headers: { 'content-type': encoded.contentType, 'content-encoding': 'gzip' },
    });
    expect(gzipped.statusCode).toBe(500);
    expect(await gzipped.body.json()).toMatchObject({ error: { code: 'unsupported_encoding' } });
    const [record] = (await listener.waitForLines(1)).map((line) => JSON.parse(line));
    expect(record).toMatchObject({ event: 'rejected', code: 'unsupported_encoding' });
  });

  it('applies --max-file-size and leaves nothing behind', async () => {
    listener = await startListen(['--out', out, '--json', '--max-file-size', '1KiB']);
    const result = await post(listener.url, {
      ...common,
      family: 'A',
      event: 'success',
      id_gen: 'big',
      file: jpegBytes(4096),
      mediaType: 'image/jpeg',
    });
    expect(result.status).toBe(500);
    expect(result.body).toMatchObject({ error: { code: 'file_too_large' } });
    const names = (await readdir(out)).filter((name) => name !== '.mediahook');
    expect(names).toEqual(['.requests']);
    expect(await readdir(join(out, '.requests'))).toEqual([]); // its raw copy went too
  });

  it('stops cleanly on SIGTERM', async () => {
    const started = await startListen(['--out', out]);
    expect(await started.stop()).toBe(0);
    expect(started.stderr()).toMatch(/SIGTERM, stopping/);
  });

  it('stops within its grace on SIGTERM while an upload stalls, and leaves no temporary file', async () => {
    // Without the grace, the stalled upload would hold the exit until its idle timeout.
    listener = await startListen(['--out', out, '--idle-timeout', '60s']);
    const { port } = new URL(listener.url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => {});
    const jpeg = jpegBytes(3 * 1024 * 1024);
    socket.write(
      'POST /hook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\n' +
        `Content-Length: ${jpeg.length + 1000}\r\n\r\n` +
        '--b\r\nContent-Disposition: form-data; name="result_pv"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n',
    );
    socket.write(jpeg);
    // The upload is under way (a temporary file exists) and then goes quiet.
    await eventuallyTrue(async () => (await readdir(out)).some((name) => name.endsWith('.part')));
    const started = performance.now();
    expect(await listener.stop()).toBe(0);
    listener = undefined;
    expect(performance.now() - started).toBeLessThan(15_000);
    expect((await readdir(out)).filter((name) => name.endsWith('.part'))).toEqual([]);
    socket.destroy();
  });

  it('refuses bad flags with exit 2', async () => {
    const cases = [
      ['--port', 'x'],
      ['--family', 'C'],
      ['--max-file-size', 'lots'],
      ['--min-upload-rate', 'fast'],
      ['--request-timeout', 'soon'],
      ['--secret', 'nope'],
      ['--secret', 'whsec_abc'],
    ];
    const codes = await Promise.all(
      cases.map((args) => {
        const child = spawn(BIN, ['listen', ...args], { stdio: 'pipe' });
        return new Promise<number | null>((resolve) => child.on('exit', resolve));
      }),
    );
    expect(codes).toEqual(cases.map(() => 2));
  });
});
