import { ProtocolError } from '../../protocol/index.ts';
import { ReceiverError } from '../receiver-error.ts';

/** An error Node's HTTP parser (or its header timer) hands to `clientError`. */
export type HttpClientError = Error & { code?: string; reason?: string };

/**
 * What a request that Node could not read as HTTP means for its sender, with a stable code:
 * a sender that closed or reset the connection mid-request (`stage` tells where) is `aborted`,
 * headers over Node's limit `headers_too_large`, headers that never ended `timeout`, and
 * anything else the parser refused (a bad chunk size, Content-Length and Transfer-Encoding
 * together, a body with no length) `malformed_request`.
 */
export function clientErrorOf(
  error: HttpClientError,
  stage: 'headers' | 'body' = 'body',
): ReceiverError | ProtocolError {
  const part = stage === 'headers' ? 'the request headers were' : 'the body was';
  switch (error.code) {
    case 'HPE_INVALID_EOF_STATE':
      return new ReceiverError('aborted', `the sender closed the connection before ${part} complete`);
    case 'ECONNRESET':
      return new ReceiverError('aborted', `the sender reset the connection before ${part} complete`);
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
