import type { Receiver } from '../receiver.ts';
import { webHandler } from './web.ts';

/** The part of Hono's `Context` the adapter needs. */
interface HonoContextLike {
  req: { raw: Request };
}

/**
 * A Hono handler: `app.post('/callbacks', honoHandler(receiver))`. Hono's own `parseBody` is
 * bypassed, so the file streams instead of being buffered.
 *
 * @example
 * const app = new Hono();
 * app.post('/callbacks', honoHandler(createReceiver({ out: './callbacks' })));
 */
export function honoHandler(receiver: Receiver): (c: HonoContextLike) => Promise<Response> {
  const handle = webHandler(receiver);
  return (c) => handle(c.req.raw);
}
