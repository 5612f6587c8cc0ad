import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ProtocolError } from '../../protocol/index.ts';
import type { ReceiverResponse } from '../receiver.ts';
import { ReceiverError } from '../receiver-error.ts';

/** An error Node's HTTP parser (or its header timer) hands to `clientError`. */
export type HttpClientError = Error & { code?: string; reason?: string };

/**
 * What a request that Node could not read as HTTP means for its sender, with a stable code:
 * a sender that went quiet mid-body is `aborted`, headers over Node's limit `headers_too_large`,
 * headers that never ended `timeout`, and anything else the parser refused (a bad chunk size,
 * Content-Length and Transfer-Encoding together, a body with no length) `malformed_request`.
 */
export function clientErrorOf(error: HttpClientError): ReceiverError | ProtocolError {
  switch (error.code) {
    case 'HPE_INVALID_EOF_STATE':
      return new ReceiverError('aborted', 'the sender closed the connection before the body was complete');
    case 'HPE_HEADER_OVERFLOW':
      return new ProtocolError('headers_too_large', 'the request headers are larger than the server reads');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ReceiverError('timeout', 'the request headers did not arrive in time');
    default:
      return new ReceiverError(
        'malformed_request',
        `the request is not valid HTTP/1.1 (${error.code ?? 'unknown'}: ${error.reason ?? error.message})`,
      );
  }
}

/** How long the rest of a refused request is read and dropped, at most, after the answer. */
const LINGER_MS = 2_000;

/**
 * Writes an answer straight to a socket that Node's HTTP server gave up on, then closes it.
 * The close lingers (see `lingerWhileUploading`): a sender still writing would otherwise be
 * reset before it reads the answer.
 */
export function answerOnSocket(socket: Duplex, response: ReceiverResponse): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = Buffer.from(response.body);
  const head = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}`];
  for (const [name, value] of Object.entries(response.headers)) head.push(`${name}: ${value}`);
  head.push(`content-length: ${body.length}`, 'connection: close', '', '');
  socket.end(Buffer.concat([Buffer.from(head.join('\r\n'), 'latin1'), body]));
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}
