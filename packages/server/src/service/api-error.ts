import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { isProtocolError } from 'mediahook/protocol';
import { answerOwedOn } from 'mediahook/internal';
import { isDependencyFault } from '../faults/dependency-fault.ts';
import { StoreError } from '../store/index.ts';
import { SubmissionError } from './submission/submission-error.ts';

/** An API failure with its stable code, HTTP status and any headers the status requires. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

/** 405 naming the methods the resource takes (`Allow` is a MUST, RFC 9110 §15.5.6). */
export function methodNotAllowed(method: string, path: string, allowed: readonly string[]): ApiError {
  return new ApiError(405, 'method_not_allowed', `${method} is not allowed on ${path}`, {
    allow: allowed.join(', '),
  });
}

/** 401 with the challenge RFC 6750 §3 asks for; `invalid_token` when a key was given but is unknown. */
export function unauthorized(keyGiven: boolean): ApiError {
  const challenge = keyGiven ? 'Bearer realm="mediahook", error="invalid_token"' : 'Bearer realm="mediahook"';
  const message = keyGiven
    ? 'the API key is unknown, revoked or expired'
    : 'an API key is required: Authorization: Bearer <key>';
  return new ApiError(401, 'unauthorized', message, { 'www-authenticate': challenge });
}

/**
 * 421 to a request for a Host the server does not answer to: a page on a rebinding name
 * (DNS rebinding) reads and drives nothing.
 */
export function hostNotAllowed(message: string): ApiError {
  return new ApiError(421, 'host_not_allowed', message);
}

/** 403 to a state-changing request that another site's page made, whatever its key. */
export function crossSiteRequest(reason: string): ApiError {
  return new ApiError(
    403,
    'cross_site_request',
    `a page of another site made this request (${reason}); allow its origin with --allow-origin (allowedOrigins)`,
  );
}

const STORE_STATUS: Record<string, number> = {
  not_found: 404,
  conflict: 409,
  invalid_argument: 400,
};

/** What a 503 asks the client to wait before trying again. */
const RETRY_AFTER_SECONDS = 5;

/** The one place where errors become API answers: `{status, headers, body}`. */
export function apiErrorResponse(error: unknown): {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: { error: { code: string; message: string } };
} {
  if (error instanceof ApiError) {
    return {
      status: error.status,
      headers: error.headers,
      body: { error: { code: error.code, message: error.message } },
    };
  }
  if (error instanceof SubmissionError || isProtocolError(error)) {
    return {
      status: error.code === 'conflict' ? 409 : 400,
      headers: {},
      body: { error: { code: error.code, message: error.message } },
    };
  }
  // A dependency that is down (the database, the blob store, the disk): try again shortly.
  if (isDependencyFault(error)) {
    return {
      status: 503,
      headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
      body: {
        error: { code: 'unavailable', message: 'the service is unavailable for now; try again shortly' },
      },
    };
  }
  if (error instanceof StoreError) {
    return {
      status: STORE_STATUS[error.code] ?? 500,
      headers: {},
      body: { error: { code: error.code, message: error.message } },
    };
  }
  return {
    status: 500,
    headers: {},
    body: { error: { code: 'internal_error', message: 'the request could not be processed' } },
  };
}

/**
 * For `server.on('clientError', …)` on the API's server: bytes Node cannot read as a request
 * get the API's JSON error (400, 431 for headers over Node's limit, 408 for headers that never
 * ended) instead of Node's bare answer. A connection that sent nothing, or is gone, is closed.
 *
 * @example
 * http.createServer(service.handler).on('clientError', apiClientError);
 */
export function apiClientError(error: Error & { code?: string }, socket: Duplex): void {
  const idle = (socket as Partial<Socket>).bytesRead === 0;
  // A request already being answered on this connection keeps its answer: Node then closes it.
  if (!socket.writable || answerOwedOn(socket) || idle || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [status, code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'headers_too_large', 'the request headers are larger than the server reads']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'timeout', 'the request did not arrive in time']
        : [400, 'invalid_request', `the request is not valid HTTP/1.1 (${error.code ?? 'unknown'})`];
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `x-content-type-options: nosniff\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
