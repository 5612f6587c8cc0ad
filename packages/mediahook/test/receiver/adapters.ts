/**
 * The adapters under test, each behind a real HTTP server on 127.0.0.1 and an ephemeral port,
 * and a harness that wires a receiver (fresh temp dir, recorded handler calls) into one.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { onTestFinished } from 'vitest';
import type { ErrorCallback } from '../../src/protocol/index.ts';
import {
  createReceiver,
  expressHandler,
  fastifyReceiver,
  honoHandler,
  nodeHandler,
  type NodeHandlerOptions,
  type ReceivedSuccess,
  type Receiver,
  type ReceiverOptions,
  type ReceiverOutcome,
  webHandler,
} from '../../src/receiver/index.ts';
import { eventually, tempDir } from './helpers.ts';

export interface RunningServer {
  /** The callback endpoint. */
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface Adapter {
  name: string;
  start(receiver: Receiver): Promise<RunningServer>;
}

const PATH = '/callbacks';

/** What every adapter takes: the body guards and the Host check (`webHandler`'s are the same). */
export type AdapterOptions = NodeHandlerOptions;

function listening(server: Server): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const ready = () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}${PATH}`,
        port,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    };
    server.once('error', reject);
    if (server.listening) ready();
    else server.once('listening', ready);
  });
}

export async function listen(server: Server): Promise<RunningServer> {
  const running = listening(server);
  server.listen(0, '127.0.0.1');
  return running;
}

/** node:http with `nodeHandler`, with the body guards' `options`. */
export function nodeAdapter(options: AdapterOptions = {}): Adapter {
  return {
    name: 'node:http',
    start: (receiver) => listen(createServer(nodeHandler(receiver, options))),
  };
}

/**
 * Express with the receiver on `/callbacks`; `setup` mounts middleware in front of it, and
 * `options` are the body guards'.
 */
export function expressAdapter(
  setup?: (app: express.Express) => void,
  options: AdapterOptions = {},
): Adapter {
  return {
    name: 'Express 5',
    start(receiver) {
      const app = express();
      setup?.(app);
      app.all(PATH, expressHandler(receiver, options));
      return listen(createServer(app));
    },
  };
}

/** Fastify with the receiver's plugin on `/callbacks`, with the body guards' `options`. */
function fastifyAdapter(options: AdapterOptions = {}): Adapter {
  return {
    name: 'Fastify 5',
    async start(receiver) {
      const app = Fastify();
      await app.register(fastifyReceiver, { receiver, path: PATH, ...options });
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.server.address() as AddressInfo;
      return { url: `http://127.0.0.1:${port}${PATH}`, port, close: () => app.close() };
    },
  };
}

/** Hono on @hono/node-server with the receiver on `/callbacks`, with the body guards' `options`. */
function honoAdapter(options: AdapterOptions = {}): Adapter {
  return {
    name: 'Hono',
    start(receiver) {
      const app = new Hono();
      app.all(PATH, honoHandler(receiver, options));
      return listening(serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server);
    },
  };
}

/**
 * `webHandler` with the body guards' `options`. @hono/node-server only bridges node:http to
 * Request/Response here, with no Hono app in between: the handler sees nothing but the Web
 * Request, as on a runtime without Node underneath, so its guards are the Web body's own.
 */
function webAdapter(options: AdapterOptions = {}): Adapter {
  return {
    name: 'Web handler',
    start: (receiver) =>
      listening(serve({ fetch: webHandler(receiver, options), port: 0, hostname: '127.0.0.1' }) as Server),
  };
}

/** Every adapter, each with the same `options` (body guards, Host check). */
export function guardedAdapters(options: AdapterOptions): Adapter[] {
  return [
    nodeAdapter(options),
    expressAdapter(undefined, options),
    fastifyAdapter(options),
    honoAdapter(options),
    webAdapter(options),
  ];
}

export const ADAPTERS: readonly Adapter[] = guardedAdapters({});

export interface Harness extends RunningServer {
  out: string;
  receiver: Receiver;
  successes: ReceivedSuccess[];
  errors: ErrorCallback[];
  outcomes: ReceiverOutcome[];
  /** Resolves once `count` requests have an outcome (the receiver's clean-up is then done). */
  settled(count: number): Promise<void>;
}

export interface HarnessOptions extends Omit<ReceiverOptions, 'out'> {
  /** Output directory; a fresh temp dir by default. */
  out?: string;
}

/**
 * Starts a receiver behind `adapter`, recording every handler call and outcome. The user's own
 * `onSuccess` / `onError` run after the recording, so a throwing handler still counts as called.
 * Server, receiver and temp dir are torn down when the test ends.
 */
export async function startReceiver(adapter: Adapter, options: HarnessOptions = {}): Promise<Harness> {
  const out = options.out ?? (await tempDir());
  const successes: ReceivedSuccess[] = [];
  const errors: ErrorCallback[] = [];
  const outcomes: ReceiverOutcome[] = [];
  const receiver = createReceiver({
    ...options,
    out,
    onSuccess: (callback) => {
      successes.push(callback);
      return options.onSuccess?.(callback);
    },
    onError: (callback) => {
      errors.push(callback);
      return options.onError?.(callback);
    },
    onOutcome: (outcome) => {
      outcomes.push(outcome);
      options.onOutcome?.(outcome);
    },
  });
  const server = await adapter.start(receiver);
  onTestFinished(async () => {
    await server.close();
    await receiver.close();
  });
  return {
    ...server,
    out,
    receiver,
    successes,
    errors,
    outcomes,
    settled: (count) => eventually(() => outcomes.length >= count),
  };
}
