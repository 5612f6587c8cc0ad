/**
 * The API as an HTTP server, over real HTTP: what it refuses at the door (webhook URLs the
 * sender could never dial, undecodable paths), 405 with `Allow`, and HEAD wherever GET goes.
 */
import { createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { FormData, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { apiClientError } from '../../src/service/api-error.ts';
import { type RunningService, startService, waitForCallback } from './service-harness.ts';

const GOOD = { kind: 'image', family: 'A', prompt: 'p', webhook_url: 'http://127.0.0.1:9/x' };

describe('the API over HTTP', () => {
  let run: RunningService;
  beforeAll(async () => {
    run = await startService();
  });
  afterAll(async () => {
    await run?.stop();
  });

  it('refuses webhook URLs the sender could never dial with 400, saying why', async () => {
    const cases: [string, RegExp][] = [
      ['http://', /not a valid absolute URL/],
      ['https://:99999/', /not a valid absolute URL/],
      ['http://exa%00mple.com/', /not a valid absolute URL/],
      ['http://host.example:0/', /port 0/],
      // The parser would drop these, and the URL dialled would not be the one stored.
      ['http://127.0.0.1/ok\r\nX-Injected: 1', /space or a control character/],
      ['http://127.0.0.1/a\tb', /space or a control character/],
      ['http://127.0.0.1/a b', /space or a control character/],
      ['http://127.0.0.1/\u007f', /space or a control character/],
    ];
    for (const [webhook_url, message] of cases) {
      const response = await run.post('/v1/operations', { ...GOOD, webhook_url });
      expect([response.status, response.body?.error?.code], webhook_url).toEqual([400, 'invalid_request']);
      expect(response.body.error.message, webhook_url).toMatch(/^webhook_url /);
      expect(response.body.error.message, webhook_url).toMatch(message);
    }
  });

  it('takes any URL the WHATWG parser reads, Unicode included', async () => {
    // No workers: these hosts are not on this machine, and nothing here dials them.
    const quiet = await startService({ workers: false });
    try {
      for (const webhook_url of [
        'http://[::1]:65535/x',
        'HTTPS://Host.Example/a?b#c',
        'http://1.2.3/',
        'http://bücher.example/hook',
        'https://hooks.example/こんにちは?q=é',
      ]) {
        const created = await quiet.post('/v1/operations', { ...GOOD, webhook_url });
        expect(created.status, webhook_url).toBe(202);
        expect(created.body.webhook_url, webhook_url).toBe(webhook_url);
      }
    } finally {
      await quiet.stop();
    }
  });

  it('reads a request target that starts // as a path, not as a host', async () => {
    for (const path of ['//x/healthz', '//v1/operations']) {
      const response = await run.get(path);
      expect([response.status, response.body?.error?.code], path).toEqual([404, 'not_found']);
    }
  });

  it('takes JSON only as application/json, and limit only as a plain number', async () => {
    const patch = await run.call('POST', '/v1/operations', JSON.stringify(GOOD), {
      'content-type': 'application/json-patch+json',
    });
    expect([patch.status, patch.body?.error?.code]).toEqual([415, 'unsupported_media_type']);
    const charset = await run.call('POST', '/v1/operations', JSON.stringify(GOOD), {
      'content-type': 'Application/JSON ; charset=utf-8',
    });
    expect(charset.status).toBe(202);
    for (const limit of ['1e2', '0x10', ' 5', '5.0', '']) {
      const response = await run.get(`/v1/operations?limit=${encodeURIComponent(limit)}`);
      expect([response.status, response.body?.error?.code], limit).toEqual([400, 'invalid_request']);
    }
    expect((await run.get('/v1/operations?limit=500')).status).toBe(200);
  });

  it('refuses a body that is not UTF-8, a content coding, and a lone surrogate escape', async () => {
    // No workers: the operations made here would add failures to the shared receiver's circuit.
    const run = await startService({ workers: false });
    onTestFinished(() => run.stop());
    const text = JSON.stringify({ ...GOOD, prompt: 'café' });
    const latin1 = await run.call('POST', '/v1/operations', Buffer.from(text, 'latin1'));
    expect([latin1.status, latin1.body?.error?.code]).toEqual([400, 'invalid_json']);
    expect(latin1.body.error.message).toMatch(/not UTF-8/);
    const gzip = await run.call('POST', '/v1/operations', text, { 'content-encoding': 'gzip' });
    expect([gzip.status, gzip.body?.error?.code]).toEqual([415, 'unsupported_media_type']);
    expect(gzip.body.error.message).toMatch(/Content-Encoding gzip/);
    const identity = await run.call('POST', '/v1/operations', text, { 'content-encoding': 'identity' });
    expect(identity.status).toBe(202);
    for (const field of ['prompt', 'status', 'fail_with']) {
      const body = JSON.stringify({ ...GOOD, [field]: 'x' }).replace('"x"', '"a\\ud800b"');
      const lone = await run.call('POST', '/v1/operations', body);
      expect([lone.status, lone.body?.error?.code], field).toEqual([400, 'invalid_request']);
      expect(lone.body.error.message, field).toMatch(new RegExp(`^${field} contains a lone surrogate`));
    }
    // A pair of escapes is one character, and fine.
    const pair = JSON.stringify({ ...GOOD, prompt: 'x' }).replace('"x"', '"\\ud83d\\ude00"');
    const created = await run.call('POST', '/v1/operations', pair);
    expect(created.status).toBe(202);
  });

  it('answers bytes Node cannot read as a request with the API’s JSON error (apiClientError)', async () => {
    const server = createServer((_, res) => res.end()).on('clientError', apiClientError);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const exchange = (bytes: string) =>
      new Promise<string>((resolve) => {
        let answer = '';
        const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
        socket.setEncoding('latin1').on('data', (text: string) => (answer += text));
        socket.on('error', () => {});
        socket.on('close', () => resolve(answer));
      });
    try {
      const both = await exchange(
        'POST /v1/operations HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n',
      );
      expect(both).toMatch(/^HTTP\/1\.1 400 /);
      expect(both).toMatch(/\r\ncontent-type: application\/json/);
      expect(JSON.parse(both.slice(both.indexOf('\r\n\r\n') + 4))).toMatchObject({
        error: { code: 'invalid_request' },
      });
      const large = await exchange(`GET / HTTP/1.1\r\nHost: a\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`);
      expect(large).toMatch(/^HTTP\/1\.1 431 [^]*"code":"headers_too_large"/);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('answers a missing or repeated Host and an Expect it cannot meet with JSON, and closes (createApiServer)', async () => {
    const { port } = new URL(run.url);
    // Resolves when the server closes the connection, which the client never does.
    const exchange = (head: string) =>
      new Promise<{ status: number; body: any }>((resolve, reject) => {
        let answer = '';
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(`${head}\r\n`));
        const open = setTimeout(() => {
          socket.destroy();
          reject(new Error(`the connection is still open after ${JSON.stringify(answer)}`));
        }, 3_000);
        socket.setEncoding('latin1').on('data', (text: string) => (answer += text));
        socket.on('error', reject);
        socket.on('close', () => {
          clearTimeout(open);
          const end = answer.indexOf('\r\n\r\n');
          const body = answer.slice(end + 4);
          resolve({ status: Number(answer.slice(9, 12)), body: body === '' ? null : JSON.parse(body) });
        });
      });
    const refusals: [string, number, string, RegExp][] = [
      ['GET /healthz HTTP/1.1\r\n', 400, 'invalid_request', /needs a Host header/],
      ['GET /v1/operations HTTP/1.1\r\nHost: a\r\nHost: b\r\n', 400, 'invalid_request', /more than one Host/],
      ['GET /healthz HTTP/1.1\r\nHost: a\r\nExpect: foo\r\n', 417, 'expectation_failed', /Expect: foo/],
    ];
    for (const [head, status, code, message] of refusals) {
      const answer = await exchange(head);
      expect([answer.status, answer.body?.error?.code], head).toEqual([status, code]);
      expect(answer.body.error.message, head).toMatch(message);
    }
    // HTTP/1.0 may leave Host out (and closes after one request without keep-alive).
    expect(await exchange('GET /healthz HTTP/1.0\r\n')).toEqual({ status: 200, body: { ok: true } });
  });

  it('refuses a body declared over the limit before a client waiting for 100 Continue sends it', async () => {
    const { port } = new URL(run.url);
    const exchange = (head: string, body = '') =>
      new Promise<string>((resolve, reject) => {
        let answer = '';
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(head));
        socket.setEncoding('latin1').on('data', (text: string) => {
          answer += text;
          // The body goes only after the 100, as a client that asked for it sends it.
          if (body !== '' && answer.startsWith('HTTP/1.1 100 ')) {
            socket.write(body);
            body = '';
          }
          if (/\r\n\r\n\{.*\}$/s.test(answer)) socket.end();
        });
        socket.on('error', reject);
        socket.on('close', () => resolve(answer));
      });
    const head = (length: number) =>
      `POST /v1/operations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `Expect: 100-continue\r\nContent-Length: ${length}\r\n\r\n`;
    const large = await exchange(head(20_000_000));
    expect(large).toMatch(/^HTTP\/1\.1 413 [^]*\r\nconnection: close\r\n[^]*"code":"body_too_large"/i);
    const body = JSON.stringify({ ...GOOD, prompt: 'continue' });
    const small = await exchange(head(Buffer.byteLength(body)), body);
    expect(small).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 202 /);
  });

  it('answers a GET of data the client already holds 304, by entity tag', async () => {
    // No workers: nothing changes the operation between the two GETs.
    const still = await startService({ workers: false });
    onTestFinished(() => still.stop());
    const created = await still.post('/v1/operations', { ...GOOD, prompt: 'etag' });
    for (const path of [`/v1/operations/${created.body.id_gen}`, '/v1/operations?limit=5']) {
      const first = await still.get(path);
      const tag = first.headers['etag'] as string;
      expect(tag, path).toMatch(/^W\/"[\w-]+"$/);
      expect(first.headers['cache-control'], path).toBe('private, no-cache');
      for (const ifNoneMatch of [tag, tag.slice(2), `"other", ${tag}`, '*']) {
        const again = await still.call('GET', path, undefined, { 'if-none-match': ifNoneMatch });
        expect([again.status, again.text, again.headers['etag']], `${path} ${ifNoneMatch}`).toEqual([
          304,
          '',
          tag,
        ]);
      }
      const other = await still.call('GET', path, undefined, { 'if-none-match': 'W/"other"' });
      expect([other.status, other.text], path).toEqual([200, first.text]);
    }
  });

  it('answers an undecodable path with 404 JSON, not 500', async () => {
    for (const [method, path] of [
      ['GET', '/v1/operations/%ZZ'],
      ['POST', '/v1/operations/%ZZ/redeliver'],
      ['GET', '/v1/operations/%E0%A4%A/result'],
      ['GET', '/v1/endpoints/%ZZ'],
    ] as const) {
      const response = await run.call(method, path);
      expect([response.status, response.body?.error?.code], `${method} ${path}`).toEqual([404, 'not_found']);
    }
  });

  it('answers 405 with the methods the resource takes in Allow', async () => {
    const id = (await run.post('/v1/operations', GOOD)).body.id_gen as string;
    for (const [method, path, allow] of [
      ['DELETE', '/v1/operations', 'GET, HEAD, POST'],
      ['PUT', `/v1/operations/${id}`, 'GET, HEAD'],
      ['GET', `/v1/operations/${id}/redeliver`, 'POST'],
      ['POST', `/v1/operations/${id}/result`, 'GET, HEAD'],
      ['POST', '/v1/endpoints/a:80', 'GET, HEAD'],
      ['POST', '/healthz', 'GET, HEAD'],
      ['DELETE', '/', 'GET, HEAD'],
      ['POST', '/openapi.json', 'GET, HEAD'],
      ['PUT', '/metrics', 'GET, HEAD'],
    ] as const) {
      const response = await run.call(method, path);
      expect([response.status, response.body?.error?.code], `${method} ${path}`).toEqual([
        405,
        'method_not_allowed',
      ]);
      expect(response.headers.allow, `${method} ${path}`).toBe(allow);
    }
  });

  it('shows an open circuit whose pause is over as half-open: its next attempt is the probe', async () => {
    const { store } = run;
    const now = Date.now();
    await store.updateEndpoint('paused.example:80', {
      circuit_state: 'open',
      consecutive_failures: 5,
      open_until: now + 60_000,
    });
    await store.updateEndpoint('over.example:80', {
      circuit_state: 'open',
      consecutive_failures: 5,
      open_until: now - 1,
    });
    const paused = await run.get('/v1/endpoints/paused.example:80');
    expect(paused.body).toEqual({
      key: 'paused.example:80',
      circuit_state: 'open',
      consecutive_failures: 5,
      open_until: new Date(now + 60_000).toISOString(),
    });
    const over = await run.get('/v1/endpoints/over.example:80');
    expect(over.body).toMatchObject({
      circuit_state: 'half_open',
      open_until: new Date(now - 1).toISOString(),
    });
  });

  it('answers HEAD as GET, without the body', async () => {
    // A receiver of its own: the other tests' failures at GOOD's would open that one's circuit.
    const created = await run.post('/v1/operations', {
      ...GOOD,
      prompt: 'head',
      webhook_url: 'http://127.0.0.1:19/x',
    });
    const id = created.body.id_gen as string;
    // Dead: its resource no longer changes between the GET and the HEAD compared below.
    const operation = await waitForCallback(run, id, ['dead']);
    expect(operation.state).toBe('succeeded');
    const paths = ['/healthz', '/', '/openapi.json', `/v1/operations/${id}`, `/v1/operations/${id}/result`];
    for (const path of paths) {
      const get = await run.get(path);
      const head = await run.call('HEAD', path);
      expect([head.status, head.text], path).toEqual([200, '']);
      expect(head.headers['content-type'], path).toBe(get.headers['content-type']);
      expect(head.headers['content-length'], path).toBe(get.headers['content-length']);
      expect(Number(head.headers['content-length']), path).toBeGreaterThan(0);
    }
    const metrics = await run.call('HEAD', '/metrics');
    expect([metrics.status, metrics.text, metrics.headers['content-type']]).toEqual([
      200,
      '',
      'text/plain; version=0.0.4; charset=utf-8',
    ]);
    expect((await run.call('HEAD', '/v1/operations/nope')).status).toBe(404);
  });
});

describe('the SSRF guard at creation', () => {
  let run: RunningService;
  beforeAll(async () => {
    run = await startService({ ssrf: {} });
  });
  afterAll(async () => {
    await run?.stop();
  });

  it('refuses at creation a URL its text alone gives away, naming --allow-private-urls', async () => {
    const cases: [string, RegExp][] = [
      ['http://127.0.0.1:9/x', /loopback/],
      ['http://[::1]/x', /loopback/],
      ['http://10.1.2.3/x', /private/],
      ['http://169.254.169.254/latest/meta-data/', /169\.254\.169\.254/],
      ['http://localhost:8080/x', /loopback/],
      ['http://u:p@host.example/', /credentials/],
      ['https://user@host.example/', /credentials/],
    ];
    for (const [webhook_url, reason] of cases) {
      const created = await run.post('/v1/operations', { ...GOOD, webhook_url });
      expect([created.status, created.body?.error?.code], webhook_url).toEqual([
        400,
        'webhook_url_not_allowed',
      ]);
      expect(created.body.error.message, webhook_url).toMatch(reason);
      expect(created.body.error.message, webhook_url).toMatch(/--allow-private-urls/);
    }
    const form = new FormData();
    form.append('webhook_url', 'http://127.0.0.1:9/x');
    form.append('family', 'A');
    form.append('id_gen', 'refused-at-the-door');
    form.append('message', 'it failed');
    const handedIn = await request(`${run.url}/v1/callbacks`, { method: 'POST', body: form });
    const body = (await handedIn.body.json()) as { error: { code: string } };
    expect([handedIn.statusCode, body.error.code]).toEqual([400, 'webhook_url_not_allowed']);
    expect((await run.get('/v1/operations/refused-at-the-door')).status).toBe(404);
  });
});
