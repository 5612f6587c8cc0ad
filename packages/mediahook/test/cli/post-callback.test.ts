/**
 * postCallback on Node's http client: what is sent, and every shape of answer, including ones
 * given before the body was all sent and ones cut short. Receivers on loopback only.
 */
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { afterHead, closeAll, failureOf, MiB, post, serve, serveRaw, text, zeros } from './post-helpers.ts';

afterEach(closeAll);

describe('postCallback: the request', () => {
  it('streams a body of known length with its headers, one connection, closed on return', async () => {
    const seen: { headers: Record<string, unknown>; bytes: number; closed: Promise<unknown> }[] = [];
    const url = await serve((req, res) => {
      let bytes = 0;
      req.on('data', (chunk: Buffer) => (bytes += chunk.length));
      req.on('end', () => {
        seen.push({ headers: req.headers, bytes, closed: once(req.socket, 'close') });
        res.end('taken');
      });
    });
    const progress: number[] = [];
    const result = await post(url, zeros(3 * MiB + 5), {
      headers: { 'webhook-id': 'op-1' },
      onProgress: (sent) => progress.push(sent),
    });
    expect(result).toMatchObject({
      statusCode: 200,
      statusText: 'OK',
      bytesSent: 3 * MiB + 5,
      location: null,
    });
    expect(result.body.toString()).toBe('taken');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.bytes).toBe(3 * MiB + 5);
    expect(seen[0]!.headers).toMatchObject({
      'content-length': String(3 * MiB + 5),
      'content-type': 'application/octet-stream',
      'webhook-id': 'op-1',
      'user-agent': expect.stringMatching(/^mediahook\/\d+\.\d+\.\d+/),
      host: url.host,
    });
    // HTTP/1.1's default, as a pooled client sends it: see the early answers below.
    expect(seen[0]!.headers['connection']).toBeUndefined();
    expect(seen[0]!.headers['transfer-encoding']).toBeUndefined();
    expect(progress.at(-1)).toBe(3 * MiB + 5);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    await seen[0]!.closed; // the sender closed its connection: nothing keeps a CLI alive
  });

  it('sends URL credentials as Basic authorization, to an IPv6 literal host', async () => {
    let seen: Record<string, unknown> = {};
    const url = await serve((req, res) => {
      seen = req.headers;
      req.resume().on('end', () => res.end());
    }, '::1');
    const result = await post(new URL(url.href.replace('http://', 'http://bot:s%C3%A9cret@')), text('x'));
    expect(result.statusCode).toBe(200);
    expect(seen['authorization']).toBe(`Basic ${Buffer.from('bot:sécret').toString('base64')}`);
    expect(seen['host']).toBe(url.host);
  });

  it('returns a redirect with its Location, not followed', async () => {
    let requests = 0;
    const url = await serve((req, res) => {
      requests++;
      req.resume().on('end', () => res.writeHead(307, { location: '/elsewhere' }).end());
    });
    const result = await post(url, text('x'));
    expect(result).toMatchObject({ statusCode: 307, location: '/elsewhere' });
    expect(requests).toBe(1);
  });
});

describe('postCallback: answers before the body was all sent', () => {
  const refusal = '{"error":{"code":"file_too_large","message":"no"}}';

  it('reports a 500 given at the first bytes with its body, not as a failed write', async () => {
    const url = await serve((req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' }).end(refusal);
    });
    const result = await post(url, zeros(64 * MiB));
    expect(result.statusCode).toBe(500);
    expect(result.body.toString()).toBe(refusal);
    expect(result.bytesSent).toBeLessThanOrEqual(64 * MiB);
  });

  it('and when the receiver closes the connection once it answered', async () => {
    const url = await serveRaw((socket) =>
      afterHead(socket, () => {
        socket.end(
          `HTTP/1.1 500 Internal Server Error\r\nContent-Length: ${refusal.length}\r\nConnection: close\r\n\r\n${refusal}`,
        );
      }),
    );
    const result = await post(url, zeros(64 * MiB));
    expect(result).toMatchObject({ statusCode: 500, bodyCut: false });
    expect(result.body.toString()).toBe(refusal);
  });
});

describe('postCallback: shapes of answer', () => {
  it('reads a chunked answer, and cuts one longer than the preview', async () => {
    const url = await serve((req, res) => {
      req.resume().on('end', () => {
        for (let i = 0; i < 10; i++) res.write(`part ${i};`);
        res.end(req.url === '/hook?long' ? 'z'.repeat(20_000) : '');
      });
    });
    const short = await post(url, text('x'));
    expect(short.headers['transfer-encoding']).toBe('chunked');
    expect(short.body.toString()).toBe(Array.from({ length: 10 }, (_, i) => `part ${i};`).join(''));
    const long = await post(new URL('?long', url), text('x'), { previewBytes: 1000 });
    expect(long).toMatchObject({ bodyTruncated: true, bodyLate: false, bodyCut: false });
    expect(long.body.length).toBe(1000);
  });

  it('reads an answer that ends when the receiver closes the connection', async () => {
    const url = await serveRaw((socket) =>
      afterHead(socket, () => socket.end('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end')),
    );
    const result = await post(url, text('x'));
    expect(result).toMatchObject({ statusCode: 200, bodyCut: false, bodyTruncated: false });
    expect(result.body.toString()).toBe('until the end');
  });

  it.each([
    { status: 200, headers: { 'content-length': '0' }, text: 'OK' },
    { status: 204, headers: {}, text: 'No Content' },
  ])('takes an answer $status with no body', async ({ status, headers, text: statusText }) => {
    const url = await serve((req, res) => req.resume().on('end', () => res.writeHead(status, headers).end()));
    const result = await post(url, text('x'));
    expect(result).toMatchObject({ statusCode: status, statusText, bodyCut: false, bodyLate: false });
    expect(result.body.length).toBe(0);
  });

  it('keeps what came of an answer whose connection closed before its end', async () => {
    const url = await serveRaw((socket) =>
      afterHead(socket, () => {
        socket.write('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 100\r\n\r\nonly this', () =>
          socket.destroy(),
        );
      }),
    );
    const result = await post(url, text('x'));
    expect(result).toMatchObject({ statusCode: 502, bodyCut: true });
    expect(result.body.toString()).toBe('only this');
  });
});

describe('postCallback: no answer', () => {
  it('says so when the connection is reset in the middle of the upload', async () => {
    const url = await serveRaw((socket) => {
      let bytes = 0;
      socket.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > MiB) socket.resetAndDestroy();
      });
    });
    const error = await failureOf(post(url, zeros(64 * MiB)));
    expect(error.code).toBe('connection_closed');
    expect(error.message).toMatch(/^the connection closed before an answer \(.+ of 64\.0 MiB sent\): /);
    expect(error.bytesSent).toBeLessThan(64 * MiB);
    expect(error.unreachable).toBe(false);
  });

  it('says so when the receiver closes the connection without answering', async () => {
    const url = await serve((req) => req.resume().on('end', () => req.socket.destroy()));
    const error = await failureOf(post(url, text('hello')));
    expect(error.code).toBe('connection_closed');
    expect(error.message).toMatch(
      /^the connection closed before an answer \(5 B of 5 B sent\): socket hang up/,
    );
  });

  it('passes Node’s code through for a refused connection', async () => {
    const url = await serveRaw(() => {});
    await closeAll();
    const error = await failureOf(post(url, text('x')));
    expect(error).toMatchObject({ code: 'ECONNREFUSED', message: `connection refused by ${url.host}` });
    expect(error.unreachable).toBe(true);
  });
});
