import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Receiver } from '../receiver.ts';
import { type NodeHandlerOptions, nodeHandler } from './node-http.ts';

/**
 * An Express (4 or 5) route handler. Mount it before any body parser for its path, or keep the
 * raw bytes with `express.raw({ type: 'multipart/form-data', limit: '1gb' })`; a parser that
 * turned the body into fields is answered with `body_consumed`.
 *
 * @example
 * const app = express();
 * app.post('/callbacks', expressHandler(createReceiver({ out: './callbacks' })));
 */
export function expressHandler(
  receiver: Receiver,
  options?: NodeHandlerOptions,
): (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void {
  const handle = nodeHandler(receiver, options);
  return (req, res, next) => {
    handle(req, res).catch((error: unknown) => next?.(error));
  };
}
