/**
 * The receiver behind other middleware: body parsers that leave multipart alone, one that keeps
 * the raw bytes, and ones that already consumed the body (answered `body_consumed`).
 */

import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import fastifyMultipart from '@fastify/multipart';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { createReceiver, fastifyReceiver, webHandler } from '../../src/receiver/index.ts';
import { type Adapter, expressAdapter, startReceiver } from './adapters.ts';
import { expectFile, jpegBytes, newSecret, post, send, storedFiles, tempDir, wire } from './helpers.ts';

/** A middleware of the kind that turns a body into fields: reads the stream, sets `req.body`. */
function fieldParser(body: unknown): express.RequestHandler {
  return (req, _res, next) => {
    req.on('data', () => {});
    req.on('end', () => {
      if (body !== undefined) req.body = body;
      next();
    });
  };
}

/** A Fastify app with the receiver at `/callbacks`, `setup` run first, and a JSON echo at `/json`. */
async function fastifyWith(setup: (app: FastifyInstance) => Promise<void>): Promise<Adapter> {
  return {
    name: 'Fastify 5',
    async start(receiver) {
      const app = Fastify();
      await setup(app);
      app.post('/json', async (request) => ({ echoed: request.body }));
      await app.register(fastifyReceiver, { receiver, path: '/callbacks' });
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.server.address() as AddressInfo;
      return { url: `http://127.0.0.1:${port}/callbacks`, port, close: () => app.close() };
    },
  };
}
describe('Express middleware in front of the receiver', () => {
  it('works with express.json() and express.urlencoded() mounted globally', async () => {
    const harness = await startReceiver(
      expressAdapter((app) => {
        app.use(express.json());
        app.use(express.urlencoded({ extended: false }));
      }),
    );
    const callback = await wire({ family: 'A', event: 'success', mediaType: 'video/mp4' });
    expect((await send(harness.url, callback)).status).toBe(200);
    await expectFile(join(harness.out, `${callback.id}.mp4`), callback.file);
    expect(harness.successes).toHaveLength(1);

    // A JSON or form body sent to the callback route is parsed by them, and still is no callback.
    const notCallbacks: [string, string][] = [
      ['application/json', '{"status":"success"}'],
      ['application/x-www-form-urlencoded', 'status=success&id_gen=x'],
    ];
    for (const [type, text] of notCallbacks) {
      const answer = await post(harness.url, Buffer.from(text), { 'content-type': type });
      expect(answer.status).toBe(500);
      expect(answer.body.error?.code).toBe('not_multipart');
    }
  });

  it('works with express.raw() for multipart: the receiver takes the Buffer', async () => {
    const secret = newSecret();
    const harness = await startReceiver(
      expressAdapter((app) => app.use(express.raw({ type: 'multipart/form-data', limit: '10mb' }))),
      { secret },
    );
    // Signed, so the exact bytes the parser kept are checked too.
    const callback = await wire({ family: 'B', event: 'success', sign: secret });
    expect((await send(harness.url, callback)).status).toBe(200);
    await expectFile(join(harness.out, `${callback.id}.jpg`), callback.file);
    const error = await wire({ family: 'A', event: 'error', sign: secret });
    expect((await send(harness.url, error)).status).toBe(200);
    expect(harness.errors[0]?.message).toBe(error.message);
  });

  it('still rejects a malformed body kept by express.raw()', async () => {
    const harness = await startReceiver(
      expressAdapter((app) => app.use(express.raw({ type: 'multipart/form-data' }))),
      { limits: { fileBytes: 100 } },
    );
    const answer = await send(harness.url, await wire());
    expect(answer.body.error?.code).toBe('file_too_large');
    expect(await storedFiles(harness.out)).toEqual([]);
  });

  it.each([
    ['turned into fields', { some: 'field' }],
    ['read and dropped', undefined],
  ])('answers body_consumed to a body already %s', async (_why, body) => {
    const harness = await startReceiver(expressAdapter((app) => app.use(fieldParser(body))));
    const answer = await send(harness.url, await wire());
    expect(answer.status).toBe(500);
    expect(answer.body.error?.code).toBe('body_consumed');
    expect(answer.body.error?.message).toContain('express.raw');
    await harness.settled(1);
    expect(harness.successes).toHaveLength(0);
    expect(await storedFiles(harness.out)).toEqual([]);
  });
});

describe('a receiver with a secret behind a body parser', () => {
  it('tells an unsigned or stale sender bad_signature, whatever read the body first', async () => {
    const secret = newSecret();
    const harness = await startReceiver(
      expressAdapter((app) => {
        // JSON parsed by express.json(), multipart turned into fields as multer would.
        const multipart = fieldParser({ some: 'field' });
        app.use(express.json());
        app.use((req, res, next) => (req.is('multipart/form-data') ? multipart(req, res, next) : next()));
      }),
      { secret },
    );
    const json = Buffer.from('{"status":"success"}');
    const unsignedJson = await post(harness.url, json, { 'content-type': 'application/json' });
    expect(unsignedJson.body.error?.code).toBe('bad_signature');
    const unsigned = await wire();
    expect((await send(harness.url, unsigned)).body.error?.code).toBe('bad_signature');
    const stale = await wire({ sign: secret, timestamp: Math.floor(Date.now() / 1000) - 3600 });
    expect((await send(harness.url, stale)).body.error?.code).toBe('bad_signature');

    // Signed and fresh: whether the signature holds cannot be told without the bytes, so the
    // sender learns what became of its body.
    const signed = await wire({ sign: secret });
    const signedJson = await post(harness.url, json, {
      ...signed.headers,
      'content-type': 'application/json',
    });
    expect(signedJson.body.error?.code).toBe('not_multipart');
    expect((await send(harness.url, signed)).body.error?.code).toBe('body_consumed');
    await harness.settled(5);
    expect(await storedFiles(harness.out)).toEqual([]);
  });
});

describe('a body something else started reading', () => {
  it('is body_consumed in Express when a middleware read part of it, not a malformed callback', async () => {
    // A byte counter that hands on after its first chunk: the rest flows on to it alone.
    const counter: express.RequestHandler = (req, _res, next) => {
      req.on('data', () => {});
      req.once('data', () => setImmediate(next));
    };
    const harness = await startReceiver(expressAdapter((app) => app.use(counter)));
    const answer = await send(harness.url, await wire({ file: jpegBytes(8 * 1024 * 1024) }));
    expect(answer.status).toBe(500);
    expect(answer.body.error?.code).toBe('body_consumed');
    expect(answer.body.error?.message).toMatch(/part of this request's body[^]*express\.raw/);
    expect(await storedFiles(harness.out)).toEqual([]);
  });

  it('is read from the payload a Fastify preParsing hook hands on, byte for byte', async () => {
    const secret = newSecret();
    const hooks: [string, (payload: Readable) => Promise<Readable>][] = [
      [
        'buffering',
        async (payload) => {
          const chunks: Buffer[] = [];
          for await (const chunk of payload) chunks.push(chunk as Buffer);
          return Readable.from([Buffer.concat(chunks)]);
        },
      ],
      ['passing through', async (payload) => payload.pipe(new PassThrough())],
    ];
    for (const [name, hook] of hooks) {
      const harness = await startReceiver(
        await fastifyWith(async (app) => {
          app.addHook('preParsing', async (_request, _reply, payload) => hook(payload));
        }),
        { secret },
      );
      const callback = await wire({ sign: secret, file: jpegBytes(3 * 1024 * 1024) });
      expect((await send(harness.url, callback)).status, name).toBe(200);
      await expectFile(join(harness.out, `${callback.id}.jpg`), callback.file);
    }
  });

  it('is body_consumed in Fastify when a preParsing hook read part of the payload, with advice for Fastify', async () => {
    const harness = await startReceiver(
      await fastifyWith(async (app) => {
        app.addHook('preParsing', async (_request, _reply, payload) => {
          payload.on('data', () => {});
          await once(payload, 'data');
          return payload;
        });
      }),
    );
    const answer = await send(harness.url, await wire({ file: jpegBytes(8 * 1024 * 1024) }));
    expect(answer.status).toBe(500);
    expect(answer.body.error?.code).toBe('body_consumed');
    expect(answer.body.error?.message).toMatch(/preParsing hook/);
    expect(answer.body.error?.message).not.toMatch(/express/);
    expect(await storedFiles(harness.out)).toEqual([]);
  });
});

describe('Web handler given a used Request', () => {
  /** Hands the receiver a callback's Request after `use` did something to its body. */
  async function expectBodyConsumed(use: (request: Request) => Promise<unknown> | unknown) {
    const out = await tempDir();
    const receiver = createReceiver({ out });
    try {
      const callback = await wire();
      const request = new Request('http://127.0.0.1/callbacks', {
        method: 'POST',
        headers: callback.headers,
        body: callback.body,
      });
      await use(request);
      const response = await webHandler(receiver)(request);
      expect(response.status).toBe(500);
      expect(await response.json()).toMatchObject({ error: { code: 'body_consumed' } });
      expect(await storedFiles(out)).toEqual([]);
    } finally {
      await receiver.close();
    }
  }

  it('answers body_consumed when the body was read before', async () => {
    await expectBodyConsumed((request) => request.arrayBuffer());
  });

  it('answers body_consumed when a reader took the body, even before reading any of it', async () => {
    await expectBodyConsumed((request) => request.body?.getReader());
  });
});

describe('Fastify plugin scope', () => {
  it("answers the receiver's 500 to a Content-Type Fastify itself cannot parse", async () => {
    const harness = await startReceiver(await fastifyWith(async () => {}));
    for (const contentType of [';;;', 'multipart/form-data, boundary=x', '/form-data; boundary=x']) {
      const answer = await post(harness.url, 'x', { 'content-type': contentType });
      expect(answer).toEqual({
        status: 500,
        body: { error: { code: 'not_multipart', message: expect.any(String) } },
      });
    }
    expect((await send(harness.url, await wire())).status).toBe(200);
  });

  it('leaves JSON parsing of the other routes alone', async () => {
    const harness = await startReceiver(await fastifyWith(async () => {}));
    const echo = await post(harness.url.replace('/callbacks', '/json'), '{"a":1}', {
      'content-type': 'application/json',
    });
    expect(echo).toEqual({ status: 200, body: { echoed: { a: 1 } } });
    expect((await send(harness.url, await wire())).status).toBe(200);
  });

  it('works beside @fastify/multipart registered on the root', async () => {
    const harness = await startReceiver(
      await fastifyWith(async (app) => {
        await app.register(fastifyMultipart);
      }),
    );
    const callback = await wire({ family: 'A', mediaType: 'video/mp4' });
    expect((await send(harness.url, callback)).status).toBe(200);
    await expectFile(join(harness.out, `${callback.id}.mp4`), callback.file);
  });

  it('answers requests made with inject(), as Fastify apps are tested', async () => {
    const out = await tempDir();
    const receiver = createReceiver({ out });
    const app = Fastify();
    await app.register(fastifyReceiver, { receiver, path: '/callbacks' });
    try {
      const callback = await wire();
      const inject = (payload: Buffer) =>
        app.inject({ method: 'POST', url: '/callbacks', headers: callback.headers, payload });
      const accepted = await inject(callback.body);
      expect(accepted.statusCode).toBe(200);
      expect(accepted.json()).toMatchObject({ received: true, id_gen: callback.id });
      await expectFile(join(out, `${callback.id}.jpg`), callback.file);
      const refused = await inject(callback.body.subarray(0, 100));
      expect(refused.statusCode).toBe(500);
      expect(refused.json()).toMatchObject({ error: { code: 'malformed_multipart' } });
    } finally {
      await app.close();
      await receiver.close();
    }
  });

  // The plugin declares the Fastify types it uses itself; this checks, against Fastify's own
  // types, that register() still takes it and still checks its options (tsc runs on the tests).
  it("registers under Fastify's own types, options checked", async () => {
    const receiver = createReceiver({ out: await tempDir() });
    const app = Fastify();
    await app.register(fastifyReceiver, {
      receiver,
      path: '/callbacks',
      prefix: '/hooks',
      idleTimeoutMs: 5_000,
    });
    await app.register(fastifyReceiver, () => ({ receiver, path: '/other' }));
    const misuses = () => [
      // @ts-expect-error: the receiver is required
      app.register(fastifyReceiver, { path: '/callbacks' }),
      // @ts-expect-error: so are options at all
      app.register(fastifyReceiver),
      // @ts-expect-error: a path is a string
      app.register(fastifyReceiver, { receiver, path: 1 }),
      // @ts-expect-error: the body guards are checked too
      app.register(fastifyReceiver, { receiver, idleTimeoutMs: '5s' }),
      // @ts-expect-error: unknown options are refused
      app.register(fastifyReceiver, { receiver, bogus: true }),
    ];
    expect(typeof misuses).toBe('function');
    try {
      await app.ready();
      expect(app.hasRoute({ method: 'POST', url: '/hooks/callbacks' })).toBe(true);
      expect(app.hasRoute({ method: 'POST', url: '/other' })).toBe(true);
    } finally {
      await app.close();
      await receiver.close();
    }
  });
});
