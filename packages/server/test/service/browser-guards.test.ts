/**
 * What a page in the developer's browser can make the service do: on a rebinding name it gets
 * 421 on every route; from another site its state-changing requests are 403, key or not, unless
 * its origin is allowed (then with CORS); and no answer can be sniffed into another type.
 */
import { connect } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { addAdminKey, type RunningService, startService, waitForCallback } from './service-harness.ts';

const GOOD = { kind: 'image', family: 'A', prompt: 'p', webhook_url: 'http://127.0.0.1:9/x' };

/** Any request, headers as given (Host included); the status, error code and headers. */
async function call(run: RunningService, method: string, path: string, headers: Record<string, string> = {}) {
  const body = method === 'POST' ? JSON.stringify(GOOD) : undefined;
  const response = await request(`${run.url}${path}`, {
    method,
    headers: body ? { 'content-type': 'application/json', ...headers } : headers,
    ...(body ? { body } : {}),
  });
  const text = await response.body.text();
  let code: string | null = null;
  try {
    code = (JSON.parse(text) as { error?: { code: string } }).error?.code ?? null;
  } catch {
    // not JSON: a page, metrics, a file
  }
  return { status: response.statusCode, code, headers: response.headers };
}

describe('the service against DNS rebinding', () => {
  let run: RunningService;
  const logged: Record<string, unknown>[] = [];
  beforeAll(async () => {
    run = await startService({
      workers: false,
      allowedHosts: ['mediahook.internal', '.proxy.example'],
      log: (_level, event, fields) => logged.push({ event, ...fields }),
    });
  });
  afterAll(() => run?.stop());

  it('answers 421 host_not_allowed on every route to a Host it does not answer to', async () => {
    const port = new URL(run.url).port;
    for (const host of ['rebind.test', `rebind.test:${port}`, 'localhost.rebind.test', '127.1']) {
      for (const [method, path] of [
        ['GET', '/v1/operations'],
        ['POST', '/v1/operations'],
        ['GET', '/'],
        ['GET', '/healthz'],
        ['GET', '/metrics'],
        ['GET', '/openapi.json'],
        ['POST', '/v1/operations/x/redeliver'],
        ['GET', '/v1/operations/x/result'],
        ['GET', '/v1/endpoints'],
        ['POST', '/v1/endpoints/x:80/recover'],
        ['GET', '/v1/stats'],
      ] as const) {
        const answer = await call(run, method, path, { host });
        expect([answer.status, answer.code], `${host} ${method} ${path}`).toEqual([421, 'host_not_allowed']);
      }
    }
    expect((await run.store.listOperations('default', { limit: 10 })).length).toBe(0);
  });

  it('answers IP addresses, loopback names and the names allowed, in any spelling, port or none', async () => {
    const port = new URL(run.url).port;
    const hosts = [
      `127.0.0.1:${port}`,
      '127.0.0.1',
      '127.0.0.1.',
      `[::1]:${port}`,
      '[::1]',
      `localhost:${port}`,
      'LOCALHOST.',
      'app.localhost',
      'mediahook.internal:443',
      'MediaHook.Internal.',
      'proxy.example',
      'a.b.proxy.example:8080',
    ];
    for (const host of hosts) {
      expect((await call(run, 'GET', '/v1/operations', { host })).status, host).toBe(200);
    }
  });

  it('logs a hint naming --allowed-host once per refused host name', async () => {
    const hints = logged.filter((entry) => entry['event'] === 'host_not_allowed');
    expect(hints.map((entry) => entry['host'])).toEqual(['rebind.test', 'localhost.rebind.test', '127.1']);
    expect(hints[0]!['hint']).toMatch(/--allowed-host rebind\.test$/);
  });
});

describe('the service with allowedHosts *', () => {
  it('answers any Host', async () => {
    const run = await startService({ workers: false, allowedHosts: ['*'] });
    onTestFinished(() => run.stop());
    expect((await call(run, 'GET', '/v1/operations', { host: 'rebind.test' })).status).toBe(200);
  });
});

describe('the service against requests from another site', () => {
  let run: RunningService;
  beforeAll(async () => {
    run = await startService({ workers: false });
  });
  afterAll(() => run?.stop());

  const CROSS_SITE: Record<string, string>[] = [
    { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
    { 'sec-fetch-site': 'same-site', origin: 'http://localhost:3000' },
    { 'sec-fetch-site': 'cross-site' },
    { origin: 'https://evil.example' },
    { origin: 'null' },
    { origin: 'http://127.0.0.1:1' },
  ];

  it('refuses POST, DELETE and PATCH under /v1 with 403 cross_site_request, changing nothing', async () => {
    const created = await call(run, 'POST', '/v1/operations');
    expect(created.status).toBe(202);
    const [operation] = await run.store.listOperations('default', { limit: 1 });
    for (const headers of CROSS_SITE) {
      for (const [method, path] of [
        ['POST', '/v1/operations'],
        ['POST', `/v1/operations/${operation!.id_gen}/redeliver`],
        ['DELETE', `/v1/operations/${operation!.id_gen}`],
        ['PATCH', '/v1/operations'],
        ['OPTIONS', '/v1/operations'],
        ['POST', '/v1/endpoints/127.0.0.1:9/recover'],
      ] as const) {
        const answer = await call(run, method, path, headers);
        expect([answer.status, answer.code], `${JSON.stringify(headers)} ${method} ${path}`).toEqual([
          403,
          'cross_site_request',
        ]);
      }
    }
    expect(await run.store.listOperations('default', { limit: 10 })).toHaveLength(1);
    expect((await run.store.getOperation('default', operation!.id_gen))?.callback.state).toBe(
      operation!.callback.state,
    );
  });

  it('takes the same requests from its own origin, from no browser, or as a page opened directly', async () => {
    const own = run.url;
    for (const headers of [
      {},
      { origin: own },
      { origin: own.replace('http:', 'https:') },
      { origin: own, 'sec-fetch-site': 'same-origin' },
      { 'sec-fetch-site': 'none' },
    ]) {
      expect((await call(run, 'POST', '/v1/operations', headers)).status, JSON.stringify(headers)).toBe(202);
    }
  });

  it('answers GETs from another site, which its page cannot read without CORS', async () => {
    const answer = await call(run, 'GET', '/v1/operations', CROSS_SITE[0]);
    expect(answer.status).toBe(200);
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('refuses another site with a key as without one, before the key is asked for', async () => {
    const keyed = await startService({ workers: false });
    onTestFinished(() => keyed.stop());
    const key = 'mh_test-key-0123456789';
    await addAdminKey(keyed.store, key);
    const bearer = { authorization: `Bearer ${key}` };
    for (const headers of [
      CROSS_SITE[0]!,
      { ...CROSS_SITE[0], ...bearer },
      { ...CROSS_SITE[3], ...bearer },
    ]) {
      const answer = await call(keyed, 'POST', '/v1/operations', headers);
      expect([answer.status, answer.code]).toEqual([403, 'cross_site_request']);
    }
    expect((await call(keyed, 'POST', '/v1/operations', { ...bearer, origin: keyed.url })).status).toBe(202);
  });
});

describe('the service with allowedOrigins', () => {
  it('lets that origin change state and read the answers by CORS, its preflight answered', async () => {
    const app = 'https://app.example';
    const run = await startService({ workers: false, allowedOrigins: [app] });
    onTestFinished(() => run.stop());
    const created = await call(run, 'POST', '/v1/operations', {
      origin: app,
      'sec-fetch-site': 'cross-site',
    });
    expect(created.status).toBe(202);
    expect(created.headers['access-control-allow-origin']).toBe(app);
    expect(created.headers['vary']).toBe('origin');
    const preflight = await call(run, 'OPTIONS', '/v1/operations', {
      origin: app,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization, content-type',
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(app);
    expect(preflight.headers['access-control-allow-methods']).toMatch(/POST/);
    expect(preflight.headers['access-control-allow-headers']).toMatch(/authorization/);
    const other = await call(run, 'POST', '/v1/operations', { origin: 'https://other.example' });
    expect([other.status, other.headers['access-control-allow-origin']]).toEqual([403, undefined]);
  });
});

/** Sends bytes that are not HTTP and returns the raw answer. */
function exchange(url: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(bytes));
    let answer = '';
    socket.setEncoding('latin1').on('data', (text: string) => (answer += text));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('the service and content sniffing', () => {
  it('answers nosniff on every kind of answer', async () => {
    const run = await startService({ workers: false });
    onTestFinished(() => run.stop());
    await call(run, 'POST', '/v1/operations');
    const [operation] = await run.store.listOperations('default', { limit: 1 });
    const listed = await call(run, 'GET', '/v1/operations');
    const cases: [string, string, Record<string, string>][] = [
      ['GET', '/', {}],
      ['HEAD', '/', {}],
      ['GET', '/healthz', {}],
      ['GET', '/metrics', {}],
      ['GET', '/openapi.json', {}],
      ['GET', '/v1/operations', {}],
      ['GET', '/v1/operations', { 'if-none-match': listed.headers['etag'] as string }],
      ['POST', '/v1/operations', {}],
      ['GET', `/v1/operations/${operation!.id_gen}/result`, {}],
      ['GET', '/v1/nothing', {}],
      ['PUT', '/v1/operations', {}],
      ['POST', `/v1/operations/${operation!.id_gen}/redeliver`, {}],
      ['GET', '/v1/operations?limit=0', {}],
      ['GET', '/v1/operations', { host: 'rebind.test' }],
      ['POST', '/v1/operations', { origin: 'https://evil.example' }],
    ];
    const statuses: number[] = [];
    for (const [method, path, headers] of cases) {
      const answer = await call(run, method, path, headers);
      statuses.push(answer.status);
      expect(answer.headers['x-content-type-options'], `${method} ${path} ${answer.status}`).toBe('nosniff');
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 304, 202, 404, 404, 405, 409, 400, 421, 403]);
    const broken = await exchange(
      run.url,
      'GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n',
    );
    expect(broken).toMatch(/^HTTP\/1\.1 400 [^]*\r\nx-content-type-options: nosniff\r\n/i);
  });
});

describe('a result file', () => {
  it('is sent nosniff, and for this origin only to embed', async () => {
    const run = await startService();
    onTestFinished(() => run.stop());
    await call(run, 'POST', '/v1/operations');
    const [operation] = await run.store.listOperations('default', { limit: 1 });
    await waitForCallback(run, operation!.id_gen, ['retrying', 'dead', 'delivered', 'gone']);
    const answer = await call(run, 'GET', `/v1/operations/${operation!.id_gen}/result`);
    expect([answer.status, answer.headers['content-type']]).toEqual([200, 'image/jpeg']);
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(answer.headers['cross-origin-resource-policy']).toBe('same-origin');
  });
});
