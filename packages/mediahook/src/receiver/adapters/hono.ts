/// <reference types="node" preserve="true" />
import type { IncomingMessage } from 'node:http';
import type { Receiver } from '../receiver.ts';
import type { ReceiverError } from '../receiver-error.ts';
import { type BodyGuards, bodyGuardsOf } from './body-guards.ts';
import { claimContinue } from './expect-continue.ts';
import { answerAfterHalfClose } from './half-close.ts';
import { lingerWhileUploading, watchBody } from './node-http.ts';
import { hostGuardOf } from './host-guard.ts';
import { answerWebRequest, type WebHandlerOptions } from './web.ts';

/** The part of Hono's `Context` the adapter needs. */
export interface HonoContextLike {
  req: { raw: Request };
  /** Under @hono/node-server, `{ incoming }`: the Node request under the Web one. */
  env?: unknown;
}

/**
 * A Hono handler: `app.all('/callbacks', honoHandler(receiver))` (all methods: any but POST is
 * answered 405, where `app.post` leaves them to Hono's 404). Hono's own `parseBody` is
 * bypassed, so the file streams instead of being buffered. On @hono/node-server, with
 * `deferContinue(server, path)`, a sender that asks `Expect: 100-continue` gets it only once
 * the callback's headers pass. The body is read with the idle timeout and minimum upload rate
 * of `options`: on @hono/node-server they watch the Node request underneath, as `nodeHandler`
 * does; on other runtimes, the Web body (`webHandler`).
 *
 * @example
 * const app = new Hono();
 * app.all('/callbacks', honoHandler(createReceiver({ out: './callbacks' })));
 */
export function honoHandler(
  receiver: Receiver,
  options: WebHandlerOptions = {},
): (c: HonoContextLike) => Promise<Response> {
  const guards = bodyGuardsOf(options);
  const hostGuard = hostGuardOf(options);
  // On Node the guards watch the request underneath, so the Web body is read as it is.
  const unguarded = bodyGuardsOf({ idleTimeoutMs: 0, minBytesPerSecond: 0 });
  return (c) => {
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    const refusal = hostGuard?.(c.req.raw.headers.get('host') ?? incoming?.headers.host) ?? null;
    if (!incoming || typeof incoming.setTimeout !== 'function') {
      return answerWebRequest(receiver, c.req.raw, guards, null, refusal);
    }
    return answerOnNode(receiver, c.req.raw, incoming, { guards, unguarded }, refusal);
  };
}

/** On @hono/node-server: the guards watch the Node request under the Web one. */
async function answerOnNode(
  receiver: Receiver,
  request: Request,
  incoming: IncomingMessage,
  { guards, unguarded }: { guards: BodyGuards; unguarded: BodyGuards },
  refusal: ReceiverError | null,
): Promise<Response> {
  // Claimed before the Web body is touched: a deferred 100 Continue waits for the headers' checks.
  answerAfterHalfClose(incoming);
  const onRead = claimContinue(incoming) ?? undefined;
  const response = await answerWebRequest(
    receiver,
    request,
    unguarded,
    {
      onRead,
      watch: (fail) => watchBody(incoming, guards, fail),
    },
    refusal,
  );
  // A refusal mid-upload: read the rest while the answer goes out, as nodeHandler does.
  if (response.headers.get('connection') === 'close') lingerWhileUploading(incoming);
  return response;
}
