/**
 * What a browser can make a receiver do, through every adapter: a page on a rebinding name
 * (the opt-in Host check), a page that posts a form (refused by its Origin), and what every
 * answer says to a browser about its type (nosniff).
 */
import { request } from 'undici';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  type AdapterOptions,
  guardedAdapters,
  type HarnessOptions,
  nodeAdapter,
  startReceiver,
} from './adapters.ts';
import { eventually, storedFiles, wire } from './helpers.ts';

/** POSTs a callback with extra headers; the answer's status, code and nosniff header. */
async function sendWith(url: string, headers: Record<string, string>) {
  const callback = await wire();
  const response = await request(url, {
    method: 'POST',
    body: callback.body,
    headers: { ...callback.headers, ...headers },
  });
  const body = (await response.body.json()) as { error?: { code: string } };
  return {
    status: response.statusCode,
    code: body.error?.code ?? null,
    nosniff: response.headers['x-content-type-options'],
  };
}

function adaptersWith(options: AdapterOptions) {
  return guardedAdapters(options);
}

describe('nodeHandler with allowedHosts and no onHostRefused', () => {
  it('warns once per refused host name, naming allowedHosts', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => {
      if (warning.name === 'HostNotAllowed') warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    onTestFinished(() => void process.off('warning', onWarning));
    const harness = await startReceiver(nodeAdapter({ allowedHosts: [] }));
    for (const host of ['rebind.test', 'rebind.test:1', 'REBIND.test', 'other.test']) {
      expect((await sendWith(harness.url, { host })).code).toBe('host_not_allowed');
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/"rebind\.test".*allowedHosts rebind\.test$/);
    expect(warnings[1]).toMatch(/"other\.test"/);
  });
});

const refusedHosts: string[] = [];

describe.each(
  adaptersWith({
    allowedHosts: ['hooks.example.com', '.tunnel.example'],
    onHostRefused: (host) => refusedHosts.push(host),
  }),
)('$name with allowedHosts', (adapter) => {
  it('refuses a callback for a Host it does not answer to with 500 host_not_allowed, storing nothing', async () => {
    const harness = await startReceiver(adapter);
    const hosts = ['rebind.test', `rebind.test:${harness.port}`, 'hooks.example.com.evil.test'];
    for (const host of hosts) {
      const answer = await sendWith(harness.url, { host });
      expect([answer.status, answer.code], host).toEqual([500, 'host_not_allowed']);
    }
    await harness.settled(hosts.length);
    expect(harness.outcomes.map((outcome) => outcome.error?.code)).toEqual(
      hosts.map(() => 'host_not_allowed'),
    );
    expect(refusedHosts).toEqual(expect.arrayContaining(hosts));
    expect(harness.successes).toEqual([]);
    expect(await storedFiles(harness.out)).toEqual([]);
  });

  it('takes a callback for an IP address, localhost or a name allowed, with or without a port', async () => {
    const harness = await startReceiver(adapter);
    const hosts = [
      `127.0.0.1:${harness.port}`,
      '127.0.0.1',
      `localhost:${harness.port}`,
      'app.localhost',
      `[::1]:${harness.port}`,
      'HOOKS.example.com.',
      'abc.tunnel.example:443',
    ];
    for (const host of hosts) {
      expect((await sendWith(harness.url, { host })).status, host).toBe(200);
    }
    expect(harness.successes).toHaveLength(hosts.length);
  });
});

describe.each(adaptersWith({}))('$name', (adapter) => {
  it('takes any Host when no allowedHosts are given: the check is opt-in for an app', async () => {
    const harness = await startReceiver(adapter);
    expect((await sendWith(harness.url, { host: 'rebind.test' })).status).toBe(200);
  });

  it('refuses a callback carrying an Origin with 500 cross_origin_request, storing nothing', async () => {
    const harness = await startReceiver(adapter);
    for (const origin of ['https://evil.example', 'null', `http://127.0.0.1:${harness.port}`]) {
      const answer = await sendWith(harness.url, { origin });
      expect([answer.status, answer.code], origin).toEqual([500, 'cross_origin_request']);
    }
    await harness.settled(3);
    expect(harness.successes).toEqual([]);
    expect(await storedFiles(harness.out)).toEqual([]);
  });

  it('refuses the page before checking a signature', async () => {
    const harness = await startReceiver(adapter, { secret: `whsec_${'A'.repeat(32)}` });
    const answer = await sendWith(harness.url, { origin: 'https://evil.example' });
    expect([answer.status, answer.code]).toEqual([500, 'cross_origin_request']);
  });

  it('takes a callback from an origin in allowedOrigins', async () => {
    const options: HarnessOptions = { allowedOrigins: ['https://app.example'] };
    const harness = await startReceiver(adapter, options);
    expect((await sendWith(harness.url, { origin: 'https://app.example' })).status).toBe(200);
    const other = await sendWith(harness.url, { origin: 'https://other.example' });
    expect(other.code).toBe('cross_origin_request');
    await eventually(() => harness.successes.length === 1);
  });

  it('answers nosniff, taken or refused', async () => {
    const harness = await startReceiver(adapter);
    expect((await sendWith(harness.url, {})).nosniff).toBe('nosniff');
    const refused = await request(harness.url, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'x' },
    });
    await refused.body.dump();
    expect([refused.statusCode, refused.headers['x-content-type-options']]).toEqual([500, 'nosniff']);
  });
});
