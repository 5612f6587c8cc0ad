import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import { allowHalfOpen } from 'mediahook/internal';
import { apiClientError, ApiError } from './api-error.ts';
import { MAX_JSON_BYTES } from './request-validation.ts';

/**
 * An HTTP server for the API's handler whose every refusal is the API's JSON error: bytes
 * that are not HTTP (`apiClientError`) and, as the handler checks them itself
 * (`requestHeadError`), a missing or repeated `Host` (400) and an `Expect` it cannot meet
 * (417) — where Node would answer those with an empty body of its own; and a client that
 * half-closes after its request still gets its answer.
 *
 * @example
 * createApiServer(service.handler).listen(8080, '127.0.0.1');
 */
export function createApiServer(handler: RequestListener): Server {
  const server = createServer({ requireHostHeader: false }, handler);
  // A client that half-closes once its request is sent still gets the answer (the operation it
  // created included); Node's default would end the connection before it.
  allowHalfOpen(server);
  server.on('clientError', apiClientError);
  // Node hands a request with an Expect other than 100-continue here instead of to the handler.
  server.on('checkExpectation', handler);
  // A client that waits for `100 Continue` before a body over the limit gets the 413 instead,
  // and never sends it; any other gets its 100 at once, as Node would send it.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (!(Number(req.headers['content-length']) > MAX_JSON_BYTES)) res.writeContinue();
    handler(req, res);
  });
  return server;
}

const CLOSE = { connection: 'close' } as const;

/** Node's test for a `100-continue` expectation, which it meets itself. */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/**
 * The refusal a request's head earns before any route, or null. HTTP/1.1 asks for exactly one
 * `Host` (RFC 9112 §3.2: a server answers 400 to none or several; HTTP/1.0 may leave it out),
 * and an expectation the server cannot meet is answered 417 (RFC 9110 §10.1.1).
 */
export function requestHeadError(
  req: Pick<IncomingMessage, 'rawHeaders' | 'httpVersion' | 'headers'>,
): ApiError | null {
  let hosts = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]!.toLowerCase() === 'host') hosts++;
  }
  // The connection closes after these, as Node's own 400s do: its framing is not trusted.
  if (hosts > 1) {
    return new ApiError(400, 'invalid_request', 'the request has more than one Host header', CLOSE);
  }
  if (hosts === 0 && req.httpVersion !== '1.0') {
    return new ApiError(400, 'invalid_request', 'an HTTP/1.1 request needs a Host header', CLOSE);
  }
  const expectation = req.headers.expect;
  if (expectation !== undefined && !CONTINUE.test(expectation)) {
    return new ApiError(
      417,
      'expectation_failed',
      `the server cannot meet Expect: ${expectation.slice(0, 100)}`,
      CLOSE,
    );
  }
  return null;
}
