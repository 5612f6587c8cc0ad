import { STATUS_CODES } from 'node:http';
import { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import type { EncodedCallback } from '../protocol/index.ts';
import { connectorWithDeadline } from './connect-deadline.ts';
import { userAgent } from '../protocol/version.ts';
import { formatDuration } from './duration.ts';
import { formatBytes } from './progress.ts';

/** How much of a receiver's answer is kept for display; the rest is not read. */
export const BODY_PREVIEW_BYTES = 8 * 1024;

/**
 * A URL fit to print: the password of a `user:password@` URL replaced by `***`.
 *
 * @example
 * displayUrl(new URL('https://bot:s3cret@example.com/hook')); // 'https://bot:***@example.com/hook'
 */
export function displayUrl(url: URL): string {
  if (url.password === '') return url.href;
  const copy = new URL(url.href);
  copy.password = '***';
  return copy.href;
}

function decodeComponent(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text; // a stray % is taken literally, as the user typed it
  }
}

/** The URL without credentials, and the Basic authorization they stand for (as curl sends it). */
function splitCredentials(url: URL): { target: URL; authorization?: string } {
  if (url.username === '' && url.password === '') return { target: url };
  const target = new URL(url.href);
  target.username = '';
  target.password = '';
  const pair = `${decodeComponent(url.username)}:${decodeComponent(url.password)}`;
  return { target, authorization: `Basic ${Buffer.from(pair, 'utf8').toString('base64')}` };
}

/** What postCallback sends: an encoded callback, or any body of a known size. */
export type PostBody = Pick<EncodedCallback, 'contentType' | 'contentLength' | 'body'>;

export interface PostOptions {
  encoded: PostBody;
  /** Where to POST; `user:password@` in it becomes a Basic Authorization header. */
  url: URL;
  /** Extra request headers, such as the signature headers. */
  headers?: Record<string, string> | undefined;
  /** Time to open the connection (TCP and TLS). */
  connectTimeoutMs: number;
  /**
   * Time the receiver may stop reading the upload, or take to answer once the body is sent,
   * or pause while sending its answer.
   */
  responseTimeoutMs: number;
  /** Called as bytes are handed to the socket, with the running total. */
  onProgress?: ((sent: number) => void) | undefined;
  /** Bytes of the answer to keep; {@link BODY_PREVIEW_BYTES} by default. */
  previewBytes?: number | undefined;
}

export interface PostResult {
  statusCode: number;
  /** The standard reason phrase for the code (HTTP/1.1 reason phrases are not exposed). */
  statusText: string;
  headers: Record<string, string | string[] | undefined>;
  /** The Location of a 3xx answer (never followed), else null. */
  location: string | null;
  /** The start of the answer's body. */
  body: Buffer;
  /** True when the answer was longer than the preview and was cut. */
  bodyTruncated: boolean;
  /** True when the answer's body was still coming a whole response timeout after its status. */
  bodyLate: boolean;
  /** Request body bytes handed to the socket. */
  bytesSent: number;
  durationMs: number;
}

/** Failures before a connection was open: nothing there, or no way to it. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** A callback that got no HTTP answer: the connection failed, timed out or was cut. */
export class PostError extends Error {
  override readonly name = 'PostError';
  /** True when no connection could be opened at all (refused, unresolvable, no route). */
  get unreachable(): boolean {
    return this.code !== undefined && UNREACHABLE.has(this.code);
  }
  constructor(
    message: string,
    /** The undici or system error code, such as `ECONNREFUSED` or `UND_ERR_HEADERS_TIMEOUT`. */
    readonly code: string | undefined,
    readonly bytesSent: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * POSTs an encoded callback the way the service does: Content-Length known up front, the body
 * streamed (never held whole), redirects not followed, `User-Agent: mediahook/<version>`.
 * Credentials in the URL are sent as Basic authorization, since undici would drop them.
 * Resolves with any HTTP answer, whatever its status; rejects with a {@link PostError} when
 * there is none. Uses its own connection pool, closed before returning, so a CLI process
 * exits as soon as the answer is printed.
 *
 * @example
 * const encoded = await encodeCallback({ family: 'A', event: 'error', status: 'error',
 *   id_gen: 'op-1', time_gen: new Date().toISOString(), message: 'out of credits' });
 * const result = await postCallback({ url: new URL('http://127.0.0.1:9000/hook'), encoded,
 *   connectTimeoutMs: 10_000, responseTimeoutMs: 30_000 });
 * console.log(result.statusCode, result.body.toString());
 */
export async function postCallback(options: PostOptions): Promise<PostResult> {
  const { url, encoded, onProgress } = options;
  const agent = new Agent({
    connect: connectorWithDeadline({ timeout: options.connectTimeoutMs }),
    // undici arms this when the request starts and re-arms it whenever the socket drains, so
    // it also catches a receiver that stops reading the upload.
    headersTimeout: options.responseTimeoutMs,
    bodyTimeout: options.responseTimeoutMs,
  });
  const started = performance.now();
  let sent = 0;
  let uploaded = false;
  async function* counted(): AsyncGenerator<Buffer> {
    for await (const chunk of encoded.body()) {
      sent += chunk.length;
      onProgress?.(sent);
      yield chunk;
    }
    uploaded = true;
  }
  const { target, authorization } = splitCredentials(url);
  try {
    const response = await request(target, {
      method: 'POST',
      dispatcher: agent,
      headers: {
        ...options.headers,
        ...(authorization === undefined ? {} : { authorization }),
        'content-type': encoded.contentType,
        'content-length': String(encoded.contentLength),
        'user-agent': userAgent(),
      },
      // Byte mode: undici writes each chunk as it comes, within the stream's small buffer.
      body: Readable.from(counted(), { objectMode: false }),
    });
    const limit = options.previewBytes ?? BODY_PREVIEW_BYTES;
    const chunks: Buffer[] = [];
    let kept = 0;
    let truncated = false;
    // The status has decided: the answer's body is read for one more timeout at most, as one
    // trickling a byte now and then (within the stall timeout) would otherwise hold on for hours.
    let late = false;
    const deadline = setTimeout(() => {
      late = true;
      response.body.destroy();
    }, options.responseTimeoutMs);
    try {
      for await (const chunk of response.body) {
        const bytes = chunk as Buffer;
        if (kept + bytes.length > limit) {
          chunks.push(bytes.subarray(0, limit - kept));
          kept = limit;
          truncated = true;
          break; // leaving the loop destroys the rest of the answer unread
        }
        chunks.push(bytes);
        kept += bytes.length;
      }
    } catch (error) {
      if (!late) throw error;
    } finally {
      clearTimeout(deadline);
    }
    const { statusCode, headers } = response;
    const redirect = statusCode >= 300 && statusCode < 400;
    return {
      statusCode,
      // The receiver's own reason phrase when it gave one (HTTP/1.1 keeps it; it may be empty).
      statusText: response.statusText || (STATUS_CODES[statusCode] ?? ''),
      bodyLate: late,
      headers,
      location: redirect && typeof headers['location'] === 'string' ? headers['location'] : null,
      body: Buffer.concat(chunks),
      bodyTruncated: truncated,
      bytesSent: sent,
      durationMs: Math.round(performance.now() - started),
    };
  } catch (error) {
    throw describeFailure(error, { url, sent, total: encoded.contentLength, uploaded, options });
  } finally {
    await agent.destroy().catch(() => {});
  }
}

interface FailureContext {
  url: URL;
  sent: number;
  total: number;
  uploaded: boolean;
  options: PostOptions;
}

function describeFailure(error: unknown, context: FailureContext): PostError {
  const { url, sent, total, uploaded, options } = context;
  const err = error as NodeJS.ErrnoException & { errors?: unknown[] };
  // A host with several addresses fails with an AggregateError whose own message is empty.
  const inner = err.message === '' && Array.isArray(err.errors) ? (err.errors[0] as Error | undefined) : err;
  const detail = inner?.message || String(error);
  const code = err.code;
  const progress = `${formatBytes(sent)} of ${formatBytes(total)} sent`;
  const timeout = formatDuration(options.responseTimeoutMs);
  let message: string;
  switch (code) {
    case 'ECONNREFUSED':
      message = `connection refused by ${url.host}`;
      break;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      message = `cannot resolve the host ${url.hostname}`;
      break;
    case 'UND_ERR_CONNECT_TIMEOUT':
      message = `could not connect to ${url.host} within ${formatDuration(options.connectTimeoutMs)}`;
      break;
    case 'UND_ERR_HEADERS_TIMEOUT':
      message = uploaded
        ? `no answer within ${timeout} after the body was sent`
        : `the receiver stopped reading the body for ${timeout} (${progress})`;
      break;
    case 'UND_ERR_BODY_TIMEOUT':
      message = `the answer stalled for ${timeout}`;
      break;
    case 'UND_ERR_SOCKET':
    case 'ECONNRESET':
    case 'EPIPE':
      message = `the connection closed before an answer (${progress}): ${detail}`;
      break;
    default:
      message = detail;
  }
  return new PostError(message, code, sent, { cause: error });
}
