import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Receiver, ReceiverRequest } from '../receiver.ts';
import { bodyGuardsOf } from './body-guards.ts';
import { claimContinue, deferContinueOn } from './expect-continue.ts';
import { guardedNodeBody, headerOf, type NodeHandlerOptions } from './node-http.ts';

/** The receiver and its route; the idle timeout and minimum rate are those of `nodeHandler`. */
export interface FastifyReceiverOptions extends NodeHandlerOptions {
  receiver: Receiver;
  /** Route path of the callback endpoint. Default `/`. */
  path?: string;
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
  // Unless the app's server answers checkContinue itself (then it is left alone).
  if (typeof instance.server?.listenerCount === 'function') {
    deferContinueOn(instance.server, `${instance.prefix}${path}`.replace(/\/{2,}/g, '/'));
  }
  instance.post(path, async (request, reply) => {
    let failure: unknown;
    let body: ReceiverRequest['body'] = null;
    const deferredContinue = claimContinue(request.raw);
    try {
      body =
        request.body instanceof Uint8Array
          ? request.body
          : guardedNodeBody(request.raw, guards, deferredContinue);
    } catch (error) {
      failure = error;
    }
    const response = await options.receiver.handle({
      header: (name) => headerOf(request.raw, name),
      body,
      failure,
    });
    if (response.closeConnection) reply.header('connection', 'close');
    return reply.code(response.status).headers(response.headers).send(response.body);
  });
};
