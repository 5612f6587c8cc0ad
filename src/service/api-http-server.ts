import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import { ApiError, apiClientError, apiErrorResponse } from './api-error.ts';

/**
 * An HTTP server for the API's handler whose every refusal is the API's JSON error: bytes
 * that are not HTTP (`apiClientError`), an `Expect` it cannot meet (417) and, as the handler
 * checks them itself, a missing or repeated `Host` (400) — where Node would answer those with
 * an empty body of its own.
 *
 * @example
 * createApiServer(service.handler).listen(8080, '127.0.0.1');
 */
export function createApiServer(handler: RequestListener): Server {
  const server = createServer({ requireHostHeader: false }, handler);
  server.on('clientError', apiClientError);
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const expectation = String(req.headers.expect).slice(0, 100);
    const answer = apiErrorResponse(
      new ApiError(417, 'expectation_failed', `the server cannot meet Expect: ${expectation}`),
    );
    const body = JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    res.end(body);
  });
  return server;
}

/**
 * Why a request's `Host` is unacceptable, or null: HTTP/1.1 asks for exactly one (RFC 9112
 * §3.2: a server answers 400 to none or several); HTTP/1.0 may leave it out.
 */
export function hostHeaderProblem(req: Pick<IncomingMessage, 'rawHeaders' | 'httpVersion'>): string | null {
  let count = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]!.toLowerCase() === 'host') count++;
  }
  if (count > 1) return 'the request has more than one Host header';
  if (count === 0 && req.httpVersion !== '1.0') return 'an HTTP/1.1 request needs a Host header';
  return null;
}
