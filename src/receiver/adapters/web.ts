import type { Receiver } from '../receiver.ts';
import { ReceiverError } from '../receiver-error.ts';
import {
  type BodyGuardOptions,
  type BodyGuards,
  bodyGuardsOf,
  guardedWebBody,
  guardsOn,
} from './body-guards.ts';
import { continuingOnRead } from './expect-continue.ts';

/**
 * A `Request → Response` handler for Web-standard runtimes: Next.js route handlers, Hono,
 * Deno, Bun, Cloudflare-style workers, or Node with a fetch server. The body is read with the
 * idle timeout and minimum upload rate of `options` (as `nodeHandler`'s), measured on the
 * time spent waiting for the sender.
 *
 * @example
 * // app/callbacks/route.ts (Next.js)
 * export const POST = webHandler(createReceiver({ out: '/data/callbacks' }));
 */
export function webHandler(
  receiver: Receiver,
  options: BodyGuardOptions = {},
): (request: Request) => Promise<Response> {
  const guards = bodyGuardsOf(options);
  return (request) => answerWebRequest(receiver, request, guards, null);
}

/**
 * Answers one Web request. `onRead`, when given, is called as the receiver starts reading the
 * body, that is once the callback's headers passed (a deferred `100 Continue`, on Node).
 */
export async function answerWebRequest(
  receiver: Receiver,
  request: Request,
  guards: BodyGuards,
  onRead: (() => void) | null,
): Promise<Response> {
  const failure = request.bodyUsed
    ? new ReceiverError(
        'body_consumed',
        'the request body was already read; hand the receiver the untouched Request',
      )
    : undefined;
  const stream = failure ? null : request.body;
  let body: AsyncIterable<Uint8Array> | null =
    stream && guardsOn(guards) ? guardedWebBody(stream, guards) : stream;
  if (body && onRead) body = continuingOnRead(body, onRead);
  const response = await receiver.handle({
    header: (name) => request.headers.get(name) ?? undefined,
    body,
    failure,
  });
  const headers = new Headers(response.headers);
  if (response.closeConnection) headers.set('connection', 'close');
  return new Response(response.body, { status: response.status, headers });
}
