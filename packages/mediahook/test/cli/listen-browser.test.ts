/**
 * `mediahook listen` as a user runs it, against what a page in the developer's browser can do:
 * reach it on a rebinding name, post a form to it, sniff its answers; and what another local
 * user can read of what it stores.
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OutgoingCallback } from '../../src/protocol/index.ts';
import { jpegBytes, runCli } from './helpers.ts';
import { type Listener, post, startListen } from './listen-helpers.ts';

let counter = 0;
function callback(): OutgoingCallback {
  counter += 1;
  return {
    family: 'A',
    event: 'success',
    status: 'success',
    id_gen: `op-${process.pid}-${counter}`,
    time_gen: '2026-11-22T10:00:00.000Z',
    file: jpegBytes(1000),
    mediaType: 'image/jpeg',
  };
}

/** A GET with extra headers: the status, error code and headers. */
async function get(url: string, headers: Record<string, string> = {}, method = 'GET') {
  const response = await request(url, { method, headers });
  const text = await response.body.text();
  let code: string | null = null;
  try {
    code = (JSON.parse(text) as { error?: { code: string } }).error?.code ?? null;
  } catch {
    // a page or a file
  }
  return { status: response.statusCode, code, headers: response.headers };
}

const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

describe('mediahook listen in reach of a browser', () => {
  let dir: string;
  let out: string;
  let listener: Listener | undefined;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mediahook-listen-browser-'));
    out = join(dir, 'callbacks');
  });
  afterEach(async () => {
    await listener?.stop();
    listener = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a rebinding name: 500 to a callback, storing nothing, 421 to the inspector, one hint', async () => {
    listener = await startListen(['--out', out, '--json']);
    const port = new URL(listener.url).port;
    for (const host of ['rebind.test', `rebind.test:${port}`, `REBIND.test.:${port}`]) {
      const answer = await post(listener.url, callback(), undefined, { host });
      expect([answer.status, answer.body['error']?.code], host).toEqual([500, 'host_not_allowed']);
    }
    const records = (await listener.waitForLines(3)).map((line) => JSON.parse(line));
    expect(records.map((record) => [record.event, record.code])).toEqual([
      ['rejected', 'host_not_allowed'],
      ['rejected', 'host_not_allowed'],
      ['rejected', 'host_not_allowed'],
    ]);
    for (const path of ['/', '/requests.json', '/files/x.jpg', '/nothing']) {
      const answer = await get(`${listener.url}${path.slice(1)}`, { host: `rebind.test:${port}` });
      expect([answer.status, answer.code], path).toEqual([421, 'host_not_allowed']);
    }
    expect((await readdir(out)).filter((name) => !name.startsWith('receipts'))).toEqual([]);
    const hints = listener
      .stderr()
      .split('\n')
      .filter((line) => line.includes('refused a request for Host'));
    expect(hints).toHaveLength(1);
    expect(hints[0]).toMatch(/^mediahook listen: refused .*--allowed-host rebind\.test$/);
  });

  it('answers IP addresses, loopback names and --allowed-host names, with or without a port', async () => {
    listener = await startListen([
      '--out',
      out,
      '--allowed-host',
      'abc.tunnel.example',
      '--allowed-host',
      '.corp.example',
    ]);
    const port = new URL(listener.url).port;
    for (const host of [
      `127.0.0.1:${port}`,
      '127.0.0.1',
      `[::1]:${port}`,
      `localhost:${port}`,
      'app.localhost',
      'abc.tunnel.example',
      'ABC.tunnel.example.:443',
      'corp.example',
      'hooks.corp.example:8080',
    ]) {
      expect((await post(listener.url, callback(), undefined, { host })).status, host).toBe(200);
      expect((await get(listener.url, { host })).status, host).toBe(200);
    }
    expect((await post(listener.url, callback(), undefined, { host: 'tunnel.example' })).status).toBe(500);
  });

  it('answers any Host with --allowed-host *', async () => {
    listener = await startListen(['--out', out, '--allowed-host', '*']);
    expect((await post(listener.url, callback(), undefined, { host: 'rebind.test' })).status).toBe(200);
  });

  it('refuses a callback a page posts (it carries an Origin) with 500 cross_origin_request, storing nothing', async () => {
    listener = await startListen(['--out', out, '--json', '--allow-origin', 'http://localhost:3000']);
    for (const origin of ['https://evil.example', 'null', listener.url.slice(0, -1)]) {
      const answer = await post(listener.url, callback(), undefined, { origin });
      expect([answer.status, answer.body['error']?.code], origin).toEqual([500, 'cross_origin_request']);
    }
    expect((await readdir(out)).filter((name) => !name.startsWith('receipts'))).toEqual([]);
    const allowed = await post(listener.url, callback(), undefined, { origin: 'http://localhost:3000' });
    expect(allowed.status).toBe(200);
    // The inspector's pages are read-only: a foreign Origin changes nothing there.
    expect((await get(listener.url, { origin: 'https://evil.example' })).status).toBe(200);
  });

  it('answers nosniff on every kind of answer', async () => {
    listener = await startListen(['--out', out]);
    const sent = callback();
    expect((await post(listener.url, sent)).headers['x-content-type-options']).toBe('nosniff');
    const refused = await post(listener.url, callback(), undefined, { origin: 'https://evil.example' });
    expect(refused.headers['x-content-type-options']).toBe('nosniff');
    const data = await get(`${listener.url}requests.json`);
    const cases = [
      await get(listener.url),
      await get(listener.url, {}, 'HEAD'),
      data,
      await get(`${listener.url}requests.json`, { 'if-none-match': data.headers['etag'] as string }),
      await get(`${listener.url}files/${sent.id_gen}.jpg`),
      await get(`${listener.url}files/none.jpg`),
      await get(`${listener.url}nothing`),
      await get(listener.url, {}, 'PUT'),
      await get(listener.url, { host: 'rebind.test' }),
    ];
    expect(cases.map((answer) => answer.status)).toEqual([200, 200, 200, 304, 200, 404, 404, 405, 421]);
    for (const answer of cases) expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(cases[4]!.headers['cross-origin-resource-policy']).toBe('same-origin');
  });

  it('stores files 0600 in directories it makes 0700, or as --file-mode and --dir-mode widen them', async () => {
    listener = await startListen(['--out', out]);
    const first = callback();
    expect((await post(listener.url, first)).status).toBe(200);
    expect([await modeOf(out), await modeOf(join(out, `${first.id_gen}.jpg`))]).toEqual([0o700, 0o600]);
    await listener.stop();
    const shared = join(dir, 'shared', 'callbacks');
    listener = await startListen(['--out', shared, '--file-mode', '0640', '--dir-mode', '0750']);
    const second = callback();
    expect((await post(listener.url, second)).status).toBe(200);
    expect([
      await modeOf(join(dir, 'shared')),
      await modeOf(shared),
      await modeOf(join(shared, `${second.id_gen}.jpg`)),
    ]).toEqual([0o750, 0o750, 0o640]);
  });
});

describe('mediahook listen flags', () => {
  it.each([
    [['--file-mode', '999'], /--file-mode takes an octal mode/],
    [['--file-mode', '0400'], /--file-mode 0400 takes away/],
    [['--dir-mode', '0600'], /--dir-mode 0600 takes away/],
    [['--allowed-host', 'hooks.example.com:9000'], /--allowed-host: .*without a port/],
    [['--allowed-host', 'https://hooks.example.com/'], /--allowed-host: .*not a host name/],
    [['--allow-origin', '*'], /--allow-origin: .*not an origin/],
  ])('refuses %j as wrong usage (exit 2)', async (args, message) => {
    const run = await runCli(['listen', '--port', '0', ...args]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
  });

  it('lists the new flags in --help', async () => {
    const run = await runCli(['listen', '--help']);
    for (const flag of [
      '--allowed-host NAME',
      '--allow-origin ORIGIN',
      '--file-mode MODE',
      '--dir-mode MODE',
    ]) {
      expect(run.stdout).toContain(flag);
    }
  });
});
