/// <reference types="node" preserve="true" />
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { boundaryOf, ProtocolError } from '../../protocol/index.ts';
import type { Receiver, ReceiverRequest, ReceiverResponse } from '../receiver.ts';
import { bodyGuardsOf } from './body-guards.ts';
import { claimContinue, deferContinueOn } from './expect-continue.ts';
import { answerAfterHalfClose } from './half-close.ts';
import { hostGuardOf } from './host-guard.ts';
import {
  goneSignal,
  guardedNodeBody,
  headerOf,
  lingerWhileUploading,
  type NodeHandlerOptions,
} from './node-http.ts';

/** The receiver and its route; the idle timeout and minimum rate are those of `nodeHandler`. */
export interface FastifyReceiverOptions extends NodeHandlerOptions {
  receiver: Receiver;
  /** Route path of the callback endpoint. Default `/`. */
  path?: string | undefined;
}

/*
 * The few members of Fastify's request, reply and instance the plugin uses, declared here so
 * that type-checking mediahook needs no Fastify types: an app without Fastify imports
 * 'mediahook' as it is. Fastify's own types are assignable to these (the tests register the
 * plugin on a real instance), so `app.register(fastifyReceiver, options)` still checks options.
 */

/** The request members the plugin reads. */
export interface FastifyRequestLike {
  readonly raw: IncomingMessage;
  readonly body: unknown;
}

/** The reply members the plugin calls. */
export interface FastifyReplyLike {
  readonly raw: ServerResponse;
  code(statusCode: number): FastifyReplyLike;
  header(name: string, value: string): FastifyReplyLike;
  headers(values: Record<string, string>): FastifyReplyLike;
  send(payload: string): FastifyReplyLike;
}

/** The instance members the plugin calls, on the encapsulated instance Fastify hands it. */
export interface FastifyInstanceLike {
  readonly server: Server;
  readonly prefix: string;
  removeAllContentTypeParsers(): void;
  addContentTypeParser(
    contentType: string,
    parser: (
      request: FastifyRequestLike,
      payload: IncomingMessage,
      done: (error: Error | null, body?: unknown) => void,
    ) => void,
  ): void;
  setErrorHandler(
    handler: (error: Error, request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<unknown>,
  ): unknown;
  post(
    path: string,
    handler: (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<unknown>,
  ): unknown;
  route(options: {
    method: string[];
    url: string;
    exposeHeadRoute: boolean;
    handler: (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<unknown>;
  }): unknown;
}

/** An async Fastify plugin, as `register` takes it. */
export type FastifyReceiverPlugin = (
  instance: FastifyInstanceLike,
  options: FastifyReceiverOptions,
) => Promise<void>;

function send(
  request: FastifyRequestLike,
  reply: FastifyReplyLike,
  response: ReceiverResponse,
): FastifyReplyLike {
  if (response.closeConnection) {
    reply.header('connection', 'close');
    lingerWhileUploading(request.raw);
  }
  return reply.code(response.status).headers(response.headers).send(response.body);
}

/** What `body_consumed` advises in a Fastify app. */
const FASTIFY_ADVICE =
  "the receiver reads the payload Fastify hands its route: a preParsing hook must hand on the payload's bytes " +
  'unread (or not run for the callback route), and a content-type parser for the route is not needed';

/** The refusal of a Content-Type Fastify could not parse, as the receiver names it. */
function contentTypeRefusal(request: FastifyRequestLike): ProtocolError {
  const framing = boundaryOf(headerOf(request.raw, 'content-type'));
  return 'code' in framing
    ? new ProtocolError(framing.code, framing.error)
    : new ProtocolError('not_multipart', 'the Content-Type cannot be parsed');
}

/** The methods the plugin answers 405 on its path, besides the POST it takes. */
const OTHER_METHODS = ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

/**
 * A Fastify plugin that adds a `POST` callback route, and answers the other methods on its path
 * with 405 (`Allow: POST`). Inside the plugin's scope every content type is passed through
 * unparsed, so the body streams straight into the receiver. A sender that asks
 * `Expect: 100-continue` gets `100 Continue` only once the callback's headers pass.
 *
 * @example
 * const app = Fastify();
 * await app.register(fastifyReceiver, { receiver: createReceiver({ out: './callbacks' }), path: '/callbacks' });
 */
export const fastifyReceiver: FastifyReceiverPlugin = async (instance, options) => {
  instance.removeAllContentTypeParsers();
  // The payload is what the app's preParsing hooks made of the request (a hook may hand on a
  // stream of its own): the route reads that, unread so far, rather than the raw request.
  instance.addContentTypeParser('*', (request, payload, done) =>
    done(null, payload === request.raw ? undefined : payload),
  );
  const path = options.path ?? '/';
  const guards = bodyGuardsOf(options);
  const hostGuard = hostGuardOf(options);
  // Unless the app's server answers checkContinue itself (then it is left alone).
  if (typeof instance.server?.listenerCount === 'function') {
    const full = `${instance.prefix}${path}`.replace(/\/{2,}/g, '/');
    // Under a prefix, Fastify serves the route `/` both as `/prefix/` and as `/prefix`.
    const paths = full.length > 1 && full.endsWith('/') ? [full, full.slice(0, -1)] : [full];
    deferContinueOn(instance.server, paths);
  }
  const header = (request: FastifyRequestLike) => (name: string) => headerOf(request.raw, name);
  // Fastify refuses a Content-Type it cannot parse before the route runs; the sender still
  // gets the receiver's 500 with its code, not Fastify's 415.
  instance.setErrorHandler(async (error, request, reply) => {
    if ((error as { code?: unknown }).code !== 'FST_ERR_CTP_INVALID_MEDIA_TYPE') throw error;
    const failure = hostGuard?.(request.raw.headers.host) ?? contentTypeRefusal(request);
    return send(
      request,
      reply,
      await options.receiver.handle({ header: header(request), body: null, failure }),
    );
  });
  instance.route({
    method: OTHER_METHODS,
    url: path,
    // HEAD is in the list: Fastify must not make one of its own from the GET.
    exposeHeadRoute: false,
    handler: async (request, reply) => {
      const failure = hostGuard?.(request.raw.headers.host) ?? undefined;
      const refusal = { header: header(request), body: null, failure, method: request.raw.method };
      return send(request, reply, await options.receiver.handle(refusal));
    },
  });
  instance.post(path, async (request, reply) => {
    let failure: unknown;
    let body: ReceiverRequest['body'] = null;
    answerAfterHalfClose(request.raw);
    const deferredContinue = claimContinue(request.raw);
    try {
      const refusal = hostGuard?.(request.raw.headers.host);
      if (refusal) throw refusal;
      const stream = request.body instanceof Readable ? request.body : request.raw;
      body =
        request.body instanceof Uint8Array
          ? request.body
          : guardedNodeBody(request.raw, guards, deferredContinue, undefined, {
              stream,
              advice: FASTIFY_ADVICE,
            });
    } catch (error) {
      failure = error;
    }
    const signal = goneSignal(reply.raw);
    const method = request.raw.method;
    return send(
      request,
      reply,
      await options.receiver.handle({ header: header(request), body, failure, signal, method }),
    );
  });
};
