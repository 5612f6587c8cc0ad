import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Receiver } from '../receiver.ts';
import { type NodeHandlerOptions, nodeBodyOf, watchBody } from './node-http.ts';

/** The receiver and its route; the idle timeout and minimum rate are those of `nodeHandler`. */
export interface FastifyReceiverOptions extends NodeHandlerOptions {
  receiver: Receiver;
  /** Route path of the callback endpoint. Default `/`. */
  path?: string;
}

/**
 * A Fastify plugin that adds a `POST` callback route. Inside the plugin's scope every content
 * type is passed through unparsed, so the body streams straight into the receiver.
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
  instance.post(options.path ?? '/', async (request, reply) => {
    let failure: unknown;
    let body: ReturnType<typeof nodeBodyOf> = null;
    try {
      body = request.body instanceof Uint8Array ? request.body : nodeBodyOf(request.raw);
      if (body === request.raw) watchBody(request.raw, options);
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
