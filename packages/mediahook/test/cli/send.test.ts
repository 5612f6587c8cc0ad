import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isUuidv7 } from '../../src/protocol/uuidv7.ts';
import { partsOf, SignatureVerifier } from '../../src/protocol/index.ts';
import { startUnacceptingListener } from '../unaccepting-listener.ts';
import {
  closedPort,
  jpegBytes,
  mp4Bytes,
  type Receiver,
  runCli,
  type SeenRequest,
  startReceiver,
} from './helpers.ts';

let dir: string;
let jpeg: string;
let mp4: string;
let receiver: Receiver;

const SECRET = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
const OLD_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mediahook-send-'));
  jpeg = join(dir, 'result.jpg');
  mp4 = join(dir, 'result.mp4');
  await writeFile(jpeg, jpegBytes(3000));
  await writeFile(mp4, mp4Bytes(5000));
  receiver = await startReceiver();
});

afterAll(async () => {
  await receiver.close();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  receiver.requests.length = 0;
  receiver.answer = { status: 200, body: 'accepted' };
});

function only(): SeenRequest {
  expect(receiver.requests).toHaveLength(1);
  return receiver.requests[0]!;
}

function textPart(request: SeenRequest, name: string): string {
  const part = request.parts.find((candidate) => candidate.name === name);
  expect(part?.kind).toBe('field');
  return part!.value;
}

function expectTextPartsBare(request: SeenRequest): void {
  for (const part of request.parts.filter((candidate) => candidate.kind === 'field')) {
    expect(part.rawHeaders).toEqual([`Content-Disposition: form-data; name="${part.name}"`]);
  }
}

describe('mediahook send: the four shapes', () => {
  it.each([
    { family: 'A', file: 'jpeg', part: 'result_pv', mediaType: 'image/jpeg', ext: '.jpg', size: 3000 },
    { family: 'A', file: 'mp4', part: 'result_pv', mediaType: 'video/mp4', ext: '.mp4', size: 5000 },
    { family: 'B', file: 'jpeg', part: 'res_image', mediaType: 'image/jpeg', ext: '.jpg', size: 3000 },
  ] as const)('family $family success with a $file', async (shape) => {
    const path = shape.file === 'jpeg' ? jpeg : mp4;
    const run = await runCli(['send', receiver.url, '--family', shape.family, '--file', path]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('HTTP 200 OK\naccepted\n');
    const request = only();
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/hook');
    expect(request.parts.map((part) => part.name)).toEqual(partsOf(shape.family, 'success'));
    expect(request.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(request.headers['content-length']).toBe(String(request.body.length));
    expect(request.headers['transfer-encoding']).toBeUndefined();
    expect(request.headers['user-agent']).toMatch(/^mediahook\/\d+\.\d+\.\d+/);
    expect(request.headers['webhook-signature']).toBeUndefined();
    expect(textPart(request, 'status')).toBe('success');
    const id = textPart(request, 'id_gen');
    expect(isUuidv7(id)).toBe(true);
    expect(textPart(request, 'time_gen')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expectTextPartsBare(request);
    const file = request.parts[3]!;
    expect(file).toMatchObject({ kind: 'file', filename: `${id}${shape.ext}`, mimeType: shape.mediaType });
    expect(file.rawHeaders).toEqual([
      `Content-Disposition: form-data; name="${shape.part}"; filename="${id}${shape.ext}"`,
      `Content-Type: ${shape.mediaType}`,
    ]);
    expect(file.bytes).toBe(shape.size);
  });

  it.each([
    { family: 'A', part: 'message' },
    { family: 'B', part: 'img_message' },
  ] as const)('family $family error', async (shape) => {
    const run = await runCli([
      'send',
      receiver.url,
      '--family',
      shape.family,
      '--message',
      'GPU on fire: ünïcode',
    ]);
    expect(run.code).toBe(0);
    const request = only();
    expect(request.parts.map((part) => part.name)).toEqual(partsOf(shape.family, 'error'));
    expect(request.parts.every((part) => part.kind === 'field')).toBe(true);
    expectTextPartsBare(request);
    expect(textPart(request, 'status')).toBe('error');
    expect(textPart(request, shape.part)).toBe('GPU on fire: ünïcode');
    expect(request.headers['content-length']).toBe(String(request.body.length));
  });

  it('sends the given status, id, time, filename and declared media type', async () => {
    const run = await runCli([
      'send',
      receiver.url,
      '--family',
      'a',
      '--file',
      jpeg,
      '--status',
      'done',
      '--id',
      'op-42',
      '--time',
      '1700000000',
      '--filename',
      'cat.jpeg',
      '--media-type',
      'video/mp4',
    ]);
    expect(run.code).toBe(0);
    // protocol.md's decisions: a receiver goes by the bytes and reports both types, refusing none.
    expect(run.stderr).toContain('a receiver goes by the bytes (image/jpeg) and reports both types');
    expect(run.stderr).not.toContain('media_mismatch');
    const request = only();
    expect(request.parts.slice(0, 3).map((part) => part.value)).toEqual(['done', 'op-42', '1700000000']);
    expect(request.parts[3]).toMatchObject({ filename: 'cat.jpeg', mimeType: 'video/mp4' });
  });
});

describe('mediahook send: signatures', () => {
  it('signs the exact bytes, once per secret', async () => {
    const run = await runCli([
      'send',
      receiver.url,
      '--family',
      'A',
      '--file',
      mp4,
      '--secret',
      SECRET,
      '--secret',
      OLD_SECRET,
    ]);
    expect(run.code).toBe(0);
    const request = only();
    const id = textPart(request, 'id_gen');
    expect(request.headers['webhook-id']).toBe(id);
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [SECRET, OLD_SECRET]) {
      const verifier = new SignatureVerifier(secret, (name) => request.headers[name] as string | undefined);
      verifier.update(request.body);
      expect(() => verifier.verify()).not.toThrow();
    }
    const other = new SignatureVerifier(
      `whsec_${Buffer.alloc(24, 1).toString('base64')}`,
      (name) => request.headers[name] as string | undefined,
    );
    other.update(request.body);
    expect(() => other.verify()).toThrow(/no signature matches/);
  });

  it('signs an error callback too', async () => {
    const run = await runCli([
      'send',
      receiver.url,
      '--family',
      'B',
      '--message',
      'nope',
      '--secret',
      SECRET,
      '--id',
      'op-7',
    ]);
    expect(run.code).toBe(0);
    const request = only();
    expect(request.headers['webhook-id']).toBe('op-7');
    const verifier = new SignatureVerifier(SECRET, (name) => request.headers[name] as string | undefined);
    verifier.update(request.body);
    expect(() => verifier.verify()).not.toThrow();
  });
});

describe('mediahook send: answers and exit codes', () => {
  it('exits 1 on a 500 and prints the status and body', async () => {
    receiver.answer = {
      status: 500,
      body: '{"error":{"code":"missing_part","message":"no id_gen"}}',
      contentType: 'application/json',
    };
    const run = await runCli(['send', receiver.url, '--family', 'A', '--message', 'x']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(
      'HTTP 500 Internal Server Error\n{"error":{"code":"missing_part","message":"no id_gen"}}\n',
    );
  });

  it('sends credentials in the URL as Basic authorization and never prints the password', async () => {
    const url = receiver.url.replace('http://', 'http://bot:s%C3%A9cret@');
    const run = await runCli(['send', url, '--family', 'A', '--message', 'x']);
    expect(run.code).toBe(0);
    expect(only().headers.authorization).toBe(`Basic ${Buffer.from('bot:sécret').toString('base64')}`);
    expect(run.stderr).toContain('http://bot:***@127.0.0.1:');
    expect(run.stdout + run.stderr).not.toContain('cret');
  });

  it('cuts a long answer', async () => {
    receiver.answer = { status: 200, body: 'y'.repeat(100_000) };
    const run = await runCli(['send', receiver.url, '--family', 'A', '--message', 'x']);
    expect(run.code).toBe(0);
    expect(run.stdout.length).toBeLessThan(9000);
    expect(run.stdout).toContain('answer cut after 8.00 KiB');
  });

  it('shows a redirect’s Location on stderr, with --json too, and in the JSON record', async () => {
    receiver.answer = { status: 302, body: '', headers: { location: 'http://127.0.0.1:1/elsewhere' } };
    const plain = await runCli(['send', receiver.url, '--family', 'A', '--message', 'x']);
    const json = await runCli(['send', receiver.url, '--family', 'A', '--message', 'x', '--json']);
    for (const run of [plain, json]) {
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('redirect to http://127.0.0.1:1/elsewhere not followed');
    }
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 302, location: 'http://127.0.0.1:1/elsewhere' });
  });

  it('stops writing to closed pipes without a trace, keeping its exit code', async () => {
    receiver.answer = { status: 200, body: 'y'.repeat(100_000) };
    const args = ['send', receiver.url, '--family', 'A', '--message', 'x'];
    const stdoutClosed = await runCli(args, { closed: ['stdout'] });
    expect(stdoutClosed).toMatchObject({ code: 0, stderr: expect.stringMatching(/^POST [^\n]+\n$/) });
    expect((await runCli([...args, '--json'], { closed: ['stdout', 'stderr'] })).code).toBe(0);
    receiver.answer = { status: 500, body: 'no' };
    const refused = await runCli(args, { closed: ['stdout'] });
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/^POST [^\n]+\n$/) });
  });

  it('exits 1 on a refused connection, with the error on stderr', async () => {
    const port = await closedPort();
    const run = await runCli(['send', `http://127.0.0.1:${port}/hook`, '--family', 'A', '--message', 'x']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`connection refused by 127.0.0.1:${port}`);
  });

  it('exits 1 when a connect does not complete within --connect-timeout, having sent nothing', async () => {
    const listener = await startUnacceptingListener();
    try {
      const started = Date.now();
      const run = await runCli([
        'send',
        `${listener.origin}/hook`,
        '--family',
        'A',
        '--message',
        'x',
        '--connect-timeout',
        '300ms',
      ]);
      expect(run).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr).toContain(`could not connect to 127.0.0.1:${listener.port} within 300ms`);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await listener.close();
    }
  });

  it('prints one JSON line with --json', async () => {
    receiver.answer = { status: 202, body: 'queued' };
    const run = await runCli([
      'send',
      receiver.url,
      '--family',
      'B',
      '--file',
      jpeg,
      '--id',
      'op-9',
      '--json',
    ]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      ok: true,
      status: 202,
      statusText: 'Accepted',
      family: 'B',
      event: 'success',
      id_gen: 'op-9',
      body: 'queued',
      bodyTruncated: false,
      bytes: only().body.length,
    });
  });

  it('reports a refused connection as JSON too', async () => {
    const port = await closedPort();
    const run = await runCli([
      'send',
      `http://127.0.0.1:${port}/`,
      '--family',
      'A',
      '--message',
      'x',
      '--json',
    ]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, status: null, code: 'ECONNREFUSED' });
  });

  it('streams a large file with no progress output when stderr is not a terminal', async () => {
    const big = join(dir, 'big.jpg');
    await writeFile(big, jpegBytes(6 * 1024 * 1024 + 123));
    const run = await runCli(['send', receiver.url, '--family', 'A', '--file', big]);
    expect(run.code).toBe(0);
    expect(run.stderr).not.toMatch(/[\r\x1b]/);
    expect(only().parts[3]!.bytes).toBe(6 * 1024 * 1024 + 123);
  });
});

describe('mediahook send: timeouts', () => {
  it('gives up on a receiver that stops reading, and on one that never answers', async () => {
    // Never reads the body of /stall; reads all of any other but never answers.
    const server = createServer((req) => (req.url === '/stall' ? req.pause() : req.resume()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const big = join(dir, 'stall.jpg');
    await writeFile(big, jpegBytes(48 * 1024 * 1024)); // more than loopback socket buffers hold
    try {
      const stalled = await runCli([
        'send',
        `${base}/stall`,
        '--family',
        'A',
        '--file',
        big,
        '--timeout',
        '1s',
      ]);
      expect(stalled.code).toBe(1);
      expect(stalled.stderr).toMatch(/the receiver stopped reading the body for 1s \(.+ of 48\.0 MiB sent\)/);
      const silent = await runCli([
        'send',
        `${base}/quiet`,
        '--family',
        'A',
        '--message',
        'x',
        '--timeout',
        '500ms',
      ]);
      expect(silent.code).toBe(1);
      expect(silent.stderr).toContain('no answer within 500ms after the body was sent');
      const json = await runCli([
        'send',
        `${base}/quiet`,
        '--family',
        'A',
        '--message',
        'x',
        '--timeout',
        '500ms',
        '--json',
      ]);
      expect(JSON.parse(json.stdout)).toMatchObject({
        ok: false,
        status: null,
        error: 'no answer within 500ms after the body was sent',
        code: 'response_timeout',
      });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('mediahook send: the answer', () => {
  it('shows the receiver’s own reason phrase, and stops reading a trickling answer after the timeout', async () => {
    // 200 with a reason of its own, then one byte of body every 100 ms, never ending.
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, 'Taken Gladly', { 'content-type': 'text/plain' });
        res.write('a');
        const drip = setInterval(() => res.write('b'), 100);
        res.on('close', () => clearInterval(drip));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    try {
      const started = Date.now();
      const run = await runCli(['send', url, '--family', 'A', '--message', 'x', '--timeout', '1s']);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(
        /^HTTP 200 Taken Gladly\nab+\n… \(the rest of the answer did not come within the timeout\)\n$/,
      );
      // The drip never pauses for the 1 s stall timeout: only the answer's own deadline ends it.
      expect(Date.now() - started).toBeLessThan(20_000);
      const json = await runCli([
        'send',
        url,
        '--family',
        'A',
        '--message',
        'x',
        '--timeout',
        '1s',
        '--json',
      ]);
      expect(JSON.parse(json.stdout)).toMatchObject({
        status: 200,
        statusText: 'Taken Gladly',
        bodyTruncated: true,
      });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
