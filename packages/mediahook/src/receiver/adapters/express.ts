/// <reference types="node" preserve="true" />
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Receiver } from '../receiver.ts';
import { type NodeHandler, type NodeHandlerOptions, nodeHandler } from './node-http.ts';

/** An Express route handler, with the `clientError` entry of {@link NodeHandler}. */
export type ExpressHandler = ((
  req: IncomingMessage,
  res: ServerResponse,
  next?: (error?: unknown) => void,
) => void) &
  Pick<NodeHandler, 'clientError'>;

/**
 * An Express (4 or 5) route handler. Mount it before any body parser for its path, or keep the
 * raw bytes with `express.raw({ type: 'multipart/form-data', limit: '1025mb' })`; a parser that
 * turned the body into fields is answered with `body_consumed`.
 *
 * @example
 * const app = express();
 * const callbacks = expressHandler(createReceiver({ out: './callbacks' }));
 * app.all('/callbacks', callbacks); // POST takes callbacks, other methods get 405
 * app.listen(9000).on('clientError', callbacks.clientError); // optional, see NodeHandler
 */
export function expressHandler(receiver: Receiver, options?: NodeHandlerOptions): ExpressHandler {
  const handle = nodeHandler(receiver, options);
  const route = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => {
    handle(req, res).catch((error: unknown) => next?.(error));
  };
  return Object.assign(route, { clientError: handle.clientError });
}
