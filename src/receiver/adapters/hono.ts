import type { IncomingMessage } from 'node:http';
import type { Receiver } from '../receiver.ts';
import { type NodeHandlerOptions, watchBody } from './node-http.ts';
import { webHandler } from './web.ts';

/** The part of Hono's `Context` the adapter needs. */
interface HonoContextLike {
  req: { raw: Request };
  /** Under @hono/node-server, `{ incoming }`: the Node request under the Web one. */
  env?: unknown;
}

/**
 * A Hono handler: `app.post('/callbacks', honoHandler(receiver))`. Hono's own `parseBody` is
 * bypassed, so the file streams instead of being buffered. Served by @hono/node-server, the
 * body also gets `nodeHandler`'s idle timeout and minimum rate (`options`).
 *
 * @example
 * const app = new Hono();
 * app.post('/callbacks', honoHandler(createReceiver({ out: './callbacks' })));
 */
export function honoHandler(
  receiver: Receiver,
  options: NodeHandlerOptions = {},
): (c: HonoContextLike) => Promise<Response> {
  const handle = webHandler(receiver);
  return (c) => {
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    if (incoming && typeof incoming.setTimeout === 'function') watchBody(incoming, options);
    return handle(c.req.raw);
  };
}
