/**
 * How a callback that got no HTTP answer failed: a stable code and a sentence for a person.
 * Node's own codes (`ECONNREFUSED`, `ENOTFOUND`, a TLS code) pass through; what only the
 * sender can tell (which timeout ran out, where the connection closed) has a code of ours.
 */
import { formatDuration } from './duration.ts';
import { formatBytes } from './progress.ts';

/**
 * Our codes: no connection within the connect timeout; the receiver stopped reading the body;
 * no answer after the body was sent; an answer that began but whose headers never completed;
 * the connection closed before an answer; a body source that broke its Content-Length.
 */
type PostFailureCode =
  | 'connect_timeout'
  | 'upload_stalled'
  | 'response_timeout'
  | 'answer_stalled'
  | 'connection_closed'
  | 'body_length_mismatch';

/** Failures before a connection was open: nothing there, or no way to it. */
const UNREACHABLE = new Set<string>([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'connect_timeout' satisfies PostFailureCode,
]);

/** Ours: each waited a whole timeout, as any further request to that receiver would. */
const TIMEOUT = new Set<string>([
  'connect_timeout',
  'upload_stalled',
  'response_timeout',
  'answer_stalled',
] satisfies PostFailureCode[]);

/** A callback that got no HTTP answer: the connection failed, timed out or was cut. */
export class PostError extends Error {
  override readonly name = 'PostError';
  /** True when no connection could be opened at all (refused, unresolvable, no route, timed out). */
  get unreachable(): boolean {
    return this.code !== undefined && UNREACHABLE.has(this.code);
  }
  /** True when a timeout ran out, rather than the connection failing. */
  get timedOut(): boolean {
    return this.code !== undefined && TIMEOUT.has(this.code);
  }
  constructor(
    message: string,
    /** A {@link PostFailureCode}, or Node's code, such as `ECONNREFUSED` or `CERT_HAS_EXPIRED`. */
    readonly code: string | undefined,
    readonly bytesSent: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * An error carrying one of our codes, for {@link describeFailure} to put into words.
 *
 * @example
 * request.destroy(failure('connect_timeout'));
 */
export function failure(code: PostFailureCode, message: string = code): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

interface FailureContext {
  url: URL;
  /** Body bytes the socket took, of `total`. */
  sent: number;
  total: number;
  connectTimeoutMs: number;
  responseTimeoutMs: number;
}

/** Node's codes of a connection that closed (or was reset) under a request. */
const CLOSED = new Set(['ECONNRESET', 'EPIPE', 'connection_closed']);

/**
 * The {@link PostError} for what ended a request without an answer.
 *
 * @example
 * describeFailure(failure('response_timeout'), context).message; // 'no answer within 30s after the body was sent'
 */
export function describeFailure(error: unknown, context: FailureContext): PostError {
  const { url, sent, total } = context;
  const err = error as NodeJS.ErrnoException & { errors?: unknown[] };
  // A host with several addresses fails with an AggregateError whose own message is empty.
  const inner = err.message === '' && Array.isArray(err.errors) ? (err.errors[0] as Error | undefined) : err;
  const detail = inner?.message || String(error);
  const progress = `${formatBytes(sent)} of ${formatBytes(total)} sent`;
  const timeout = formatDuration(context.responseTimeoutMs);
  const code = CLOSED.has(err.code ?? '') ? 'connection_closed' : err.code;
  const messages: Record<string, () => string> = {
    ECONNREFUSED: () => `connection refused by ${url.host}`,
    ENOTFOUND: () => `cannot resolve the host ${url.hostname}`,
    EAI_AGAIN: () => `cannot resolve the host ${url.hostname}`,
    connect_timeout: () =>
      `could not connect to ${url.host} within ${formatDuration(context.connectTimeoutMs)}`,
    upload_stalled: () => `the receiver stopped reading the body for ${timeout} (${progress})`,
    response_timeout: () => `no answer within ${timeout} after the body was sent`,
    answer_stalled: () =>
      `the answer stalled: its headers were incomplete ${timeout} after the body was sent`,
    connection_closed: () => `the connection closed before an answer (${progress}): ${detail}`,
  };
  const message = (code !== undefined && Object.hasOwn(messages, code) ? messages[code]! : () => detail)();
  return new PostError(message, code, sent, { cause: error });
}
