/**
 * `mediahook serve` as a user runs it, against what a page in the developer's browser can do
 * (a rebinding name, another site's POST, keys or none), while its own deliveries to `mediahook
 * listen` go on as before; and what another local user can read of its data directory.
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../mediahook/test/cli/helpers.ts';
import { type Listener, startListen } from '../../../mediahook/test/cli/listen-helpers.ts';
import { type ServeProcess, startServeProcess } from './service-harness.ts';

/** A request with the given headers: status, error code, headers and the parsed body. */
async function call(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
) {
  const response = await request(`${base}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.body.text();
  const parsed = (text.startsWith('{') ? JSON.parse(text) : null) as Record<string, any> | null;
  return {
    status: response.statusCode,
    code: parsed?.['error']?.code ?? null,
    body: parsed,
    headers: response.headers,
  };
}

const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

async function stop(serve: ServeProcess | undefined): Promise<void> {
  if (!serve) return;
  serve.child.kill('SIGTERM');
  await serve.exited;
}

describe('mediahook serve in reach of a browser', () => {
  let dir: string;
  let serve: ServeProcess;
  let listener: Listener;
  const app = 'https://app.example';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mediahook-serve-browser-'));
    listener = await startListen(['--out', join(dir, 'received')]);
    serve = await startServeProcess([
      '--data',
      join(dir, 'data'),
      '--allow-private-urls',
      '--retry-schedule',
      '1s',
      '--allowed-host',
      'mediahook.internal',
      '--allow-origin',
      app,
    ]);
  }, 60_000);
  afterAll(async () => {
    await stop(serve);
    await listener?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('delivers to listen as before, into files and directories of their owner alone', async () => {
    const created = await call(
      serve.url,
      'POST',
      'v1/operations',
      {},
      {
        kind: 'image',
        family: 'A',
        prompt: 'modes',
        webhook_url: `${listener.url}hook`,
      },
    );
    expect(created.status).toBe(202);
    const id = created.body!['id_gen'] as string;
    let state = '';
    for (let tries = 0; tries < 300 && state !== 'delivered'; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      state = (await call(serve.url, 'GET', `v1/operations/${id}`, {})).body!['callback'].state;
    }
    expect(state).toBe('delivered');
    const data = join(dir, 'data');
    expect(await modeOf(data)).toBe(0o700);
    for (const name of ['results', 'work']) expect(await modeOf(join(data, name)), name).toBe(0o700);
    for (const name of (await readdir(data)).filter((entry) => entry.startsWith('mediahook.sqlite'))) {
      expect(await modeOf(join(data, name)), name).toBe(0o600);
    }
    expect(await modeOf(join(data, 'results', `${id}.jpg`))).toBe(0o600);
    expect(await modeOf(join(dir, 'received'))).toBe(0o700);
    expect(await modeOf(join(dir, 'received', `${id}.jpg`))).toBe(0o600);
  });

  it('answers a rebinding name 421 and logs one hint naming --allowed-host', async () => {
    const port = new URL(serve.url).port;
    for (const host of ['rebind.test', `rebind.test:${port}`]) {
      const listed = await call(serve.url, 'GET', 'v1/operations', { host });
      expect([listed.status, listed.code, listed.headers['x-content-type-options']]).toEqual([
        421,
        'host_not_allowed',
        'nosniff',
      ]);
    }
    const allowed = await call(serve.url, 'GET', 'v1/operations', { host: `mediahook.internal:${port}` });
    expect(allowed.status).toBe(200);
    const hints = serve
      .stdout()
      .split('\n')
      .filter((line) => line.includes('"event":"host_not_allowed"'));
    expect(hints).toHaveLength(1);
    expect(JSON.parse(hints[0]!)).toMatchObject({
      level: 'warn',
      host: 'rebind.test',
      hint: expect.stringMatching(/--allowed-host rebind\.test$/),
    });
  });

  it("refuses another site's POST with 403, and takes one from --allow-origin", async () => {
    const body = { kind: 'image', family: 'A', prompt: 'x', webhook_url: 'http://127.0.0.1:9/x' };
    const evil = await call(serve.url, 'POST', 'v1/operations', { origin: 'https://evil.example' }, body);
    expect([evil.status, evil.code]).toEqual([403, 'cross_site_request']);
    const redeliver = await call(serve.url, 'POST', 'v1/operations/x/redeliver', {
      'sec-fetch-site': 'cross-site',
    });
    expect([redeliver.status, redeliver.code]).toEqual([403, 'cross_site_request']);
    const allowed = await call(serve.url, 'POST', 'v1/operations', { origin: app }, body);
    expect([allowed.status, allowed.headers['access-control-allow-origin']]).toEqual([202, app]);
  });
});

describe('mediahook serve with an API key', () => {
  it("refuses another site's POST with 403 whether it carries the key or not", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mediahook-serve-keyed-'));
    let serve: ServeProcess | undefined;
    try {
      const key = (await runCli(['keys', 'create', '--client', 'ci', '--data', dir])).stdout.trim();
      serve = await startServeProcess(['--data', dir, '--no-worker', '--allow-private-urls']);
      const body = { kind: 'image', family: 'A', prompt: 'x', webhook_url: 'http://127.0.0.1:9/x' };
      const bearer = { authorization: `Bearer ${key}` };
      for (const headers of [{}, bearer]) {
        const answer = await call(
          serve.url,
          'POST',
          'v1/operations',
          { ...headers, 'sec-fetch-site': 'cross-site' },
          body,
        );
        expect([answer.status, answer.code]).toEqual([403, 'cross_site_request']);
      }
      const own = await call(
        serve.url,
        'POST',
        'v1/operations',
        { ...bearer, origin: serve.url.slice(0, -1) },
        body,
      );
      expect(own.status).toBe(202);
      expect((await call(serve.url, 'POST', 'v1/operations', {}, body)).status).toBe(401);
    } finally {
      await stop(serve);
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('mediahook serve flags', () => {
  it('lists --allowed-host and --allow-origin in --help, and refuses bad values (exit 2)', async () => {
    const help = await runCli(['serve', '--help']);
    expect(help.stdout).toContain('--allowed-host NAME');
    expect(help.stdout).toContain('--allow-origin ORIGIN');
    const dir = await mkdtemp(join(tmpdir(), 'mediahook-serve-flags-'));
    try {
      for (const [args, message] of [
        [['--allowed-host', 'a.example:80'], /--allowed-host: .*without a port/],
        [['--allow-origin', 'app.example'], /--allow-origin: .*not an origin/],
      ] as const) {
        const run = await runCli(['serve', '--port', '0', '--data', join(dir, 'data'), ...args]);
        expect([run.code, run.stderr]).toEqual([2, expect.stringMatching(message)]);
      }
      // Refused before anything was made.
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
