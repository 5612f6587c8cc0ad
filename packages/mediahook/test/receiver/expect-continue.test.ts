/**
 * `Expect: 100-continue`: a sender that asks first gets `100 Continue` only for a callback whose
 * headers pass, and its 500 before it uploads otherwise, on every Node server: node:http (with
 * `nodeHandler(…).checkContinue` or `deferContinue`), Express and Hono (`deferContinue`) and the
 * Fastify plugin (by itself). Spoken over a raw socket, so the test sees exactly what the server
 * sends and when.
 */
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import {
  createReceiver,
  deferContinue,
  expressHandler,
  fastifyReceiver,
  honoHandler,
  MemoryReceiptStore,
  nodeHandler,
  type Receiver,
  type ReceiverOptions,
} from '../../src/receiver/index.ts';
import { listen } from './adapters.ts';
import { eventually, expectFile, newSecret, storedFiles, tempDir, type Wire, wire } from './helpers.ts';

interface ContinueServer {
  out: string;
  port: number;
  close(): Promise<void>;
}

/** node:http with the handler's own `checkContinue` entry. */
async function startNodeServer(options: Partial<ReceiverOptions> = {}): Promise<ContinueServer> {
  const out = await tempDir();
  const receiver = createReceiver({ out, store: new MemoryReceiptStore(), ...options });
  const handler = nodeHandler(receiver);
  const server = createServer(handler);
  server.on('checkContinue', handler.checkContinue);
  const running = await listen(server);
  return { out, port: running.port, close: running.close };
}

/** A receiver on a fresh directory, and the server `serve` builds around it, deferred on `/callbacks`. */
async function startDeferred(
  options: Partial<ReceiverOptions>,
  serve: (receiver: Receiver) => Server | Promise<Server>,
): Promise<ContinueServer> {
  const out = await tempDir();
  const receiver = createReceiver({ out, store: new MemoryReceiptStore(), ...options });
  const server = await serve(receiver);
  deferContinue(server, '/callbacks');
  const running = await listen(server);
  return { out, port: running.port, close: running.close };
}

/** An app's own route beside the receiver's: answers the length of the body it read. */
const OTHER_ROUTE = '/other';

/** node:http with `deferContinue`, and a route of its own beside the receiver's. */
const startDeferredNode = (options: Partial<ReceiverOptions> = {}) =>
  startDeferred(options, (receiver) => {
    const handle = nodeHandler(receiver);
    return createServer((req, res) => {
      if (req.url === '/callbacks') return void handle(req, res);
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => res.end(JSON.stringify({ length: Buffer.concat(chunks).length })));
    });
  });

/** Express 5 with `deferContinue` on the server `app.listen()` would make. */
const startExpress = (options: Partial<ReceiverOptions> = {}) =>
  startDeferred(options, (receiver) => {
    const app = express();
    app.post('/callbacks', expressHandler(receiver));
    app.post(OTHER_ROUTE, express.raw({ type: '*/*', limit: '1mb' }), (req, res) => {
      res.json({ length: (req.body as Buffer).length });
    });
    return createServer(app);
  });

/** Hono on @hono/node-server with `deferContinue` on the server `serve()` returns. */
const startHono = (options: Partial<ReceiverOptions> = {}) =>
  startDeferred(options, (receiver) => {
    const app = new Hono();
    app.post('/callbacks', honoHandler(receiver));
    app.post(OTHER_ROUTE, async (c) => c.json({ length: (await c.req.arrayBuffer()).byteLength }));
    // The server serve() would make, not listening yet: the harness listens on a free port.
    return createAdaptorServer({ fetch: app.fetch }) as Server;
  });

/**
 * Fastify with the plugin's route at `/callbacks` (by default its path; or, with `prefix`, the
 * prefix with the default path, which Fastify serves both with and without the trailing slash),
 * and a route of the app's own beside it.
 */
async function startFastifyServer(
  options: Partial<ReceiverOptions> = {},
  prefix = false,
): Promise<ContinueServer> {
  const out = await tempDir();
  const receiver = createReceiver({ out, store: new MemoryReceiptStore(), ...options });
  const app = Fastify();
  app.post('/other', async (request) => ({ length: (request.body as Buffer).length }));
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  await app.register(
    fastifyReceiver,
    prefix ? { receiver, prefix: '/callbacks' } : { receiver, path: '/callbacks' },
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { out, port: (app.server.address() as AddressInfo).port, close: () => app.close() };
}

const SERVERS = [
  { name: 'node:http (handler.checkContinue)', start: startNodeServer },
  { name: 'node:http (deferContinue)', start: startDeferredNode },
  { name: 'Express 5 (deferContinue)', start: startExpress },
  { name: 'Hono (deferContinue)', start: startHono },
  { name: 'Fastify 5', start: startFastifyServer },
  {
    name: 'Fastify 5 (under a prefix)',
    start: (options?: Partial<ReceiverOptions>) => startFastifyServer(options, true),
  },
];

/** Everything the socket receives, as it comes. */
function reader(socket: Socket) {
  let text = '';
  socket.on('data', (data: Buffer) => {
    text += data.toString('latin1');
  });
  return {
    text: () => text,
    async until(check: (text: string) => boolean): Promise<string> {
      await eventually(() => check(text)).catch(() => {
        throw new Error(`gave up waiting; got ${JSON.stringify(text)}`);
      });
      return text;
    },
  };
}

/** Sends a request head that asks `Expect: 100-continue`, and nothing of the body yet. */
function askFirst(port: number, callback: Wire, headers: Record<string, string> = {}, path = '/callbacks') {
  const socket = connect(port, '127.0.0.1');
  const head = {
    ...callback.headers,
    'content-length': String(callback.body.length),
    expect: '100-continue',
    ...headers,
  };
  const lines = Object.entries(head).map(([name, value]) => `${name}: ${value}`);
  socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines.join('\r\n')}\r\n\r\n`);
  return { socket, received: reader(socket) };
}

function finalAnswer(text: string): { status: number; body: unknown } | null {
  const start = text.search(/HTTP\/1\.1 [2-5]\d\d/);
  if (start < 0) return null;
  const rest = text.slice(start);
  const length = /content-length: (\d+)/i.exec(rest);
  const bodyAt = rest.indexOf('\r\n\r\n');
  if (!length || bodyAt < 0 || rest.length < bodyAt + 4 + Number(length[1])) return null;
  return {
    status: Number(rest.slice(9, 12)),
    body: JSON.parse(rest.slice(bodyAt + 4, bodyAt + 4 + Number(length[1]))),
  };
}

/**
 * Asks first with a new callback: `100 Continue` must come alone, and once the body is sent the
 * callback must be accepted and stored in `out`.
 */
async function expectContinuedAndAccepted(port: number, out: string): Promise<void> {
  const callback = await wire();
  const { socket, received } = askFirst(port, callback);
  try {
    await received.until((text) => text.includes('\r\n\r\n'));
    expect(received.text()).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    socket.write(callback.body);
    const text = await received.until((seen) => finalAnswer(seen) !== null);
    expect(text.match(/100 Continue/g)).toHaveLength(1);
    const answer = finalAnswer(text);
    expect(answer).toEqual({
      status: 200,
      body: { received: true, id_gen: callback.id, duplicate: false },
    });
  } finally {
    socket.destroy();
  }
  await expectFile(`${out}/${callback.id}.jpg`, callback.file);
}

interface Refusal {
  refusal: string;
  options: Partial<ReceiverOptions>;
  headers: Record<string, string>;
  code: string;
}

describe.each(SERVERS)('$name: Expect: 100-continue', ({ start: startServer }) => {
  it('answers 100 Continue for a callback whose headers pass, then takes it', async () => {
    const server = await startServer();
    try {
      await expectContinuedAndAccepted(server.port, server.out);
    } finally {
      await server.close();
    }
  });

  it.each<Refusal>([
    {
      refusal: 'a Content-Length over the limit',
      options: { maxBodyBytes: 1_000 },
      headers: {},
      code: 'body_too_large',
    },
    {
      refusal: 'a body that is not multipart',
      options: {},
      headers: { 'content-type': 'application/json' },
      code: 'not_multipart',
    },
    {
      refusal: 'no signature where one is required',
      options: { secret: newSecret() },
      headers: {},
      code: 'bad_signature',
    },
  ])(
    'refuses $refusal with a 500 before the upload, without 100 Continue',
    async ({ options, headers, code }) => {
      const server = await startServer(options);
      try {
        const callback = await wire({
          file: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), Buffer.alloc(8_000)]),
        });
        const { socket, received } = askFirst(server.port, callback, headers);
        const text = await received.until((seen) => finalAnswer(seen) !== null);
        socket.destroy();
        expect(text).not.toContain('100 Continue');
        expect(finalAnswer(text)).toEqual({
          status: 500,
          body: { error: { code, message: expect.any(String) } },
        });
        expect(text.toLowerCase()).toContain('connection: close');
        expect(await storedFiles(server.out)).toEqual([]);
      } finally {
        await server.close();
      }
    },
  );
});

const WITH_OTHER_ROUTES = [
  { name: 'node:http (deferContinue)', start: startDeferredNode },
  { name: 'Express 5 (deferContinue, express.raw on the other route)', start: startExpress },
  { name: 'Hono (deferContinue)', start: startHono },
  { name: 'Fastify 5', start: startFastifyServer },
];

describe.each(WITH_OTHER_ROUTES)("$name: Expect: 100-continue on the app's other routes", ({ start }) => {
  it("answers 100 Continue at once on a route that is not the receiver's", async () => {
    const server = await start();
    try {
      const callback = await wire();
      const { socket, received } = askFirst(server.port, callback, {}, OTHER_ROUTE);
      await received.until((text) => text.includes('\r\n\r\n'));
      expect(received.text()).toBe('HTTP/1.1 100 Continue\r\n\r\n');
      socket.write(callback.body);
      const answer = finalAnswer(await received.until((text) => finalAnswer(text) !== null));
      socket.destroy();
      expect(answer).toEqual({ status: 200, body: { length: callback.body.length } });
      expect(await storedFiles(server.out)).toEqual([]);
    } finally {
      await server.close();
    }
  });
});

describe('deferContinue', () => {
  it('sends 100 Continue when something other than a receiver reads a deferred body first', async () => {
    // A body parser in front of the route reads the body: the sender must not be left waiting.
    const out = await tempDir();
    const receiver = createReceiver({ out, store: new MemoryReceiptStore() });
    const app = express();
    app.post(
      '/callbacks',
      express.raw({ type: 'multipart/form-data', limit: '1mb' }),
      expressHandler(receiver),
    );
    const server = createServer(app);
    deferContinue(server, '/callbacks');
    const running = await listen(server);
    try {
      await expectContinuedAndAccepted(running.port, out);
    } finally {
      await running.close();
    }
  });

  it('sends one 100 Continue when a middleware reads a copy of the body before the receiver', async () => {
    const server = await startDeferred({}, (receiver) => {
      const app = new Hono();
      app.use('/callbacks', async (c, next) => {
        await c.req.raw.clone().arrayBuffer();
        await next();
      });
      app.post('/callbacks', honoHandler(receiver));
      return createAdaptorServer({ fetch: app.fetch }) as Server;
    });
    try {
      await expectContinuedAndAccepted(server.port, server.out);
    } finally {
      await server.close();
    }
  });

  it('answers 100 Continue at once when a route test throws', async () => {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('{"length":0}'));
    });
    deferContinue(server, () => {
      throw new Error('a broken route test');
    });
    const running = await listen(server);
    try {
      const callback = await wire();
      const { socket, received } = askFirst(running.port, callback);
      await received.until((text) => text.includes('\r\n\r\n'));
      socket.destroy();
      expect(received.text()).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    } finally {
      await running.close();
    }
  });

  it('adds routes to one listener when called again, and refuses a server with a listener of its own', () => {
    const server = createServer();
    deferContinue(server, '/a');
    deferContinue(server, ['/b', '/c']);
    expect(server.listenerCount('checkContinue')).toBe(1);
    const own = createServer();
    own.on('checkContinue', () => {});
    expect(() => deferContinue(own, '/a')).toThrow(/checkContinue listener of its own/);
  });
});
