import type { IncomingMessage } from 'node:http';
import type { Receiver } from '../receiver.ts';
import { type BodyGuardOptions, bodyGuardsOf } from './body-guards.ts';
import { watchBody } from './node-http.ts';
import { webHandler } from './web.ts';

/** The part of Hono's `Context` the adapter needs. */
interface HonoContextLike {
  req: { raw: Request };
  /** Under @hono/node-server, `{ incoming }`: the Node request under the Web one. */
  env?: unknown;
}

/**
 * A Hono handler: `app.post('/callbacks', honoHandler(receiver))`. Hono's own `parseBody` is
 * bypassed, so the file streams instead of being buffered. The body is read with the idle
 * timeout and minimum upload rate of `options`: on @hono/node-server they watch the Node
 * request underneath, as `nodeHandler` does; on other runtimes, the Web body (`webHandler`).
 *
 * @example
 * const app = new Hono();
 * app.post('/callbacks', honoHandler(createReceiver({ out: './callbacks' })));
 */
export function honoHandler(
  receiver: Receiver,
  options: BodyGuardOptions = {},
): (c: HonoContextLike) => Promise<Response> {
  const guards = bodyGuardsOf(options);
  // On Node the guards watch the request underneath, so the Web body is read as it is.
  const onNode = webHandler(receiver, { idleTimeoutMs: 0, minBytesPerSecond: 0 });
  const onWeb = webHandler(receiver, options);
  return (c) => {
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    if (!incoming || typeof incoming.setTimeout !== 'function') return onWeb(c.req.raw);
    watchBody(incoming, guards);
    return onNode(c.req.raw);
  };
}
