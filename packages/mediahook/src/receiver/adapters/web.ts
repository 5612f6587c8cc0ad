import type { Receiver } from '../receiver.ts';
import { ReceiverError } from '../receiver-error.ts';
import {
  type BodyGuardOptions,
  type BodyGuards,
  bodyGuardsOf,
  failableBody,
  guardedWebBody,
} from './body-guards.ts';
import { continuingOnRead } from './expect-continue.ts';
import { hostGuardOf, type HostGuardOptions } from './host-guard.ts';

/** The body guards (`BodyGuardOptions`) and the opt-in Host check (`HostGuardOptions`). */
export interface WebHandlerOptions extends BodyGuardOptions, HostGuardOptions {}

/**
 * A `Request → Response` handler for Web-standard runtimes: Next.js route handlers, Hono,
 * Deno, Bun, Cloudflare-style workers, or Node with a fetch server. The body is read with the
 * idle timeout and minimum upload rate of `options` (as `nodeHandler`'s), measured on the
 * time spent waiting for the sender.
 *
 * @example
 * // app/callbacks/route.ts (Next.js)
 * export const POST = webHandler(createReceiver({ out: '/data/callbacks' }));
 * // a runtime that shows the Host header can check it too: webHandler(receiver, { allowedHosts: [] })
 */
export function webHandler(
  receiver: Receiver,
  options: WebHandlerOptions = {},
): (request: Request) => Promise<Response> {
  const guards = bodyGuardsOf(options);
  const hostGuard = hostGuardOf(options);
  return (request) =>
    answerWebRequest(receiver, request, guards, null, hostGuard?.(request.headers.get('host') ?? undefined));
}

/** How the body of one Web request is read, besides the guards on the stream itself. */
interface WebBodyHooks {
  /** Called as the receiver starts reading the body, once the callback's headers passed. */
  onRead?: (() => void) | undefined;
  /** Watches the body from beside it (a Node request underneath), failing its reads with `fail`. */
  watch?: ((fail: (error: Error) => void) => void) | undefined;
}

/** Answers one Web request; with `refusal` (its Host refused), answers that without reading the body. */
export async function answerWebRequest(
  receiver: Receiver,
  request: Request,
  guards: BodyGuards,
  hooks: WebBodyHooks | null,
  refusal: ReceiverError | null = null,
): Promise<Response> {
  // A locked stream was taken by a reader before us, whether or not it read anything yet.
  const consumed =
    request.bodyUsed || request.body?.locked === true
      ? new ReceiverError(
          'body_consumed',
          'the request body was already read; hand the receiver the untouched Request',
        )
      : undefined;
  const failure = refusal ?? consumed;
  const stream = failure ? null : request.body;
  // Read through the stream's reader even with no guard on: under TypeScript's DOM lib (as in
  // a Next.js project) a ReadableStream is not typed as async-iterable.
  let body: AsyncIterable<Uint8Array> | null = stream ? guardedWebBody(stream, guards) : null;
  if (body && hooks?.onRead) body = continuingOnRead(body, hooks.onRead);
  if (body && hooks?.watch) body = failableBody(body, hooks.watch);
  const response = await receiver.handle({
    header: (name) => request.headers.get(name) ?? undefined,
    body,
    failure,
    method: request.method,
    // Read only if a copy must wait for another process: Deno warns on the first read.
    get signal() {
      return request.signal;
    },
  });
  const headers = new Headers(response.headers);
  if (response.closeConnection) headers.set('connection', 'close');
  return new Response(response.body, { status: response.status, headers });
}
