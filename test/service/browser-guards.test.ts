/**
 * What a page in the developer's browser can make the service do: on a rebinding name it gets
 * 421 on every route.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { type RunningService, startService } from './service-harness.ts';

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
      ] as const) {
        const answer = await call(run, method, path, { host });
        expect([answer.status, answer.code], `${host} ${method} ${path}`).toEqual([421, 'host_not_allowed']);
      }
    }
    expect((await run.store.listOperations({ limit: 10 })).length).toBe(0);
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
