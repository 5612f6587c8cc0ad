import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Receiver, ReceiverRequest } from '../receiver.ts';
import { bodyGuardsOf } from './body-guards.ts';
import { continuingOnRead, type NodeHandlerOptions, nodeBodyOf, watchBody } from './node-http.ts';

/** The receiver and its route; the idle timeout and minimum rate are those of `nodeHandler`. */
export interface FastifyReceiverOptions extends NodeHandlerOptions {
  receiver: Receiver;
  /** Route path of the callback endpoint. Default `/`. */
  path?: string;
}

/** Requests to a receiver's route that asked `Expect: 100-continue` and were not answered yet. */
const continueDeferred = new WeakSet<IncomingMessage>();
/** Per server, the callback routes (`POST` paths) whose `100 Continue` waits for the receiver. */
const deferredRoutes = new WeakMap<Server, Set<string>>();

/**
 * Node answers `100 Continue` to every request that asks, before Fastify sees it, unless the
 * server has a `checkContinue` listener. This one defers the answer for the receiver's routes,
 * so a callback refused on its headers gets its 500 before the sender uploads the file, and
 * answers at once for every other route; then it hands the request to Fastify as usual. A
 * server that already has such a listener of its own is left alone.
 */
function deferContinue(server: Server, path: string): void {
  let routes = deferredRoutes.get(server);
  if (!routes) {
    if (server.listenerCount('checkContinue') > 0) return;
    const paths = new Set<string>();
    routes = paths;
    deferredRoutes.set(server, paths);
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      const pathname = (req.url ?? '/').split('?', 1)[0]!;
      if (req.method === 'POST' && paths.has(pathname)) continueDeferred.add(req);
      else res.writeContinue();
      server.emit('request', req, res);
    });
  }
  routes.add(path);
}

/**
 * A Fastify plugin that adds a `POST` callback route. Inside the plugin's scope every content
 * type is passed through unparsed, so the body streams straight into the receiver. A sender
 * that asks `Expect: 100-continue` gets `100 Continue` only once the callback's headers pass.
 *
 * @example
 * const app = Fastify();
 * await app.register(fastifyReceiver, { receiver: createReceiver({ out: './callbacks' }), path: '/callbacks' });
 */
export const fastifyReceiver: FastifyPluginAsync<FastifyReceiverOptions> = async (
  instance: FastifyInstance,
  options: FastifyReceiverOptions,
) => {
  instance.removeAllContentTypeParsers();
  instance.addContentTypeParser('*', (_request, _payload, done) => done(null));
  const path = options.path ?? '/';
  const guards = bodyGuardsOf(options);
  if (typeof instance.server?.listenerCount === 'function') {
    deferContinue(instance.server, `${instance.prefix}${path}`.replace(/\/{2,}/g, '/'));
  }
  instance.post(path, async (request, reply) => {
    let failure: unknown;
    let body: ReceiverRequest['body'] = null;
    try {
      body = request.body instanceof Uint8Array ? request.body : nodeBodyOf(request.raw);
      if (body === request.raw) {
        watchBody(request.raw, guards);
        if (continueDeferred.has(request.raw)) body = continuingOnRead(request.raw, reply.raw);
      }
    } catch (error) {
      failure = error;
    }
    const response = await options.receiver.handle({
      header: (name) => {
        const value = request.headers[name];
        return Array.isArray(value) ? value.join(', ') : value;
      },
      body,
      failure,
    });
    if (response.closeConnection) reply.header('connection', 'close');
    return reply.code(response.status).headers(response.headers).send(response.body);
  });
};
