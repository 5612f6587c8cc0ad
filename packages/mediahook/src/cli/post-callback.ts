import { type IncomingMessage, STATUS_CODES } from 'node:http';
import { describeFailure } from './post-error.ts';
import { Exchange, type UploadOptions } from './post-exchange.ts';

export { PostError } from './post-error.ts';

/** How much of a receiver's answer is kept for display; the rest is not read. */
const BODY_PREVIEW_BYTES = 8 * 1024;

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

export interface PostOptions extends UploadOptions {
  /** Where to POST; `user:password@` in it becomes a Basic Authorization header. */
  url: URL;
  /** Extra request headers, such as the signature headers. */
  headers?: Record<string, string> | undefined;
  /** Bytes of the answer to keep; {@link BODY_PREVIEW_BYTES} by default. */
  previewBytes?: number | undefined;
}

export interface PostResult {
  statusCode: number;
  /** The receiver's reason phrase, or the standard one for the code when it gave none. */
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
  /** True when the connection closed before the answer's body was complete. */
  bodyCut: boolean;
  /** Request body bytes the socket took. */
  bytesSent: number;
  durationMs: number;
}

/**
 * POSTs an encoded callback the way the service does: Content-Length known up front, the body
 * streamed (never held whole), redirects not followed, `User-Agent: mediahook/<version>`.
 * Credentials in the URL are sent as Basic authorization. Resolves with any HTTP answer,
 * whatever its status, even one given before the whole body was sent; rejects with a
 * {@link PostError} when there is none. Each call opens a connection of its own and closes it
 * before returning, so a CLI process exits as soon as the answer is printed.
 *
 * @example
 * const encoded = await encodeCallback({ family: 'A', event: 'error', status: 'error',
 *   id_gen: 'op-1', time_gen: new Date().toISOString(), message: 'out of credits' });
 * const result = await postCallback({ url: new URL('http://127.0.0.1:9000/hook'), encoded,
 *   connectTimeoutMs: 10_000, responseTimeoutMs: 30_000 });
 * console.log(result.statusCode, result.body.toString());
 */
export async function postCallback(options: PostOptions): Promise<PostResult> {
  const { url, encoded } = options;
  const { target, authorization } = splitCredentials(url);
  const exchange = new Exchange({
    encoded,
    target,
    headers: { ...options.headers, ...(authorization === undefined ? {} : { authorization }) },
    connectTimeoutMs: options.connectTimeoutMs,
    responseTimeoutMs: options.responseTimeoutMs,
    onProgress: options.onProgress,
  });
  const started = performance.now();
  try {
    const response = await exchange.start();
    const limit = options.previewBytes ?? BODY_PREVIEW_BYTES;
    const answer = await readAnswer(response, limit, options.responseTimeoutMs);
    const { statusCode = 0, headers } = response;
    const redirect = statusCode >= 300 && statusCode < 400;
    return {
      statusCode,
      // The receiver's own reason phrase when it gave one (HTTP/1.1 keeps it; it may be empty).
      statusText: response.statusMessage || (STATUS_CODES[statusCode] ?? ''),
      headers,
      location: redirect && typeof headers.location === 'string' ? headers.location : null,
      ...answer,
      bytesSent: exchange.sent,
      durationMs: Math.round(performance.now() - started),
    };
  } catch (error) {
    throw describeFailure(error, {
      url,
      sent: exchange.sent,
      total: encoded.contentLength,
      connectTimeoutMs: options.connectTimeoutMs,
      responseTimeoutMs: options.responseTimeoutMs,
    });
  } finally {
    exchange.close();
  }
}

type Answer = Pick<PostResult, 'body' | 'bodyTruncated' | 'bodyLate' | 'bodyCut'>;

/**
 * The start of an answer's body. The status has decided: the body is read for one more
 * timeout at most, as one trickling a byte now and then would otherwise hold on for hours.
 */
function readAnswer(response: IncomingMessage, limit: number, timeoutMs: number): Promise<Answer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    let done = false;
    const finish = (how: Partial<Answer>) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      const answer = { bodyTruncated: false, bodyLate: false, bodyCut: false, ...how };
      resolve({ ...answer, body: Buffer.concat(chunks) });
    };
    const deadline = setTimeout(() => finish({ bodyLate: true }), timeoutMs);
    response.on('data', (chunk: Buffer) => {
      if (done) return;
      if (chunk.length > limit - kept) {
        chunks.push(chunk.subarray(0, limit - kept));
        finish({ bodyTruncated: true }); // the rest is not read: the connection is closed
        return;
      }
      chunks.push(chunk);
      kept += chunk.length;
    });
    response.on('end', () => finish({}));
    // Closed or reset before the end: what came is still the receiver's answer.
    response.on('error', () => finish({ bodyCut: true }));
    response.on('close', () => finish({ bodyCut: true }));
  });
}
