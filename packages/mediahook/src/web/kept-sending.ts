/**
 * Sending a kept request on: to the app behind `listen --forward-to`, from the inspector's
 * Replay button, and by `mediahook replay`. The body goes byte-exact from its file, streamed.
 */
import { postCallback } from '../cli/post-callback.ts';
import { BodySigner } from '../protocol/index.ts';
import type { KeptRequest, KeptRequests } from './kept-requests.ts';

/** Where and how a kept request is sent. */
export interface SendTarget {
  url: URL;
  /**
   * Secrets to sign it afresh with (same `webhook-id`, a new `webhook-timestamp`); when empty,
   * the headers go as received.
   */
  secrets: readonly string[];
  /** How long the app may stop reading the body, or take to answer once it is sent. */
  timeoutMs: number;
  /**
   * A `Via` entry naming this forwarder (RFC 9110 §7.6.3), so that a request that comes back
   * to it (a forward to itself) is told apart; none by default.
   */
  via?: string | undefined;
}

/** What became of one send: the app's status and time, or why there was no answer. */
export interface SendResult {
  /** The app's HTTP status; null when it gave none. */
  status: number | null;
  ms: number;
  /** The app's body when it is a JSON object with an `error` (passed to the sender as it is). */
  errorBody: string | null;
  /** Set when there was no answer: `forward_failed`, and what happened. */
  failure: { code: 'forward_failed'; message: string } | null;
}

const CONNECT_TIMEOUT_MS = 10_000;

/** The headers the request goes with: the received ones but Content-Type, or fresh signatures. */
async function headersFor(
  keeper: KeptRequests,
  kept: KeptRequest,
  secrets: readonly string[],
): Promise<Record<string, string>> {
  const headers: Record<string, string> = {};
  for (const [name, value] of kept.headers) {
    if (name === 'content-type') continue;
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  if (secrets.length === 0) return headers;
  const signer = new BodySigner(secrets, headers['webhook-id'] ?? kept.idGen);
  for await (const chunk of keeper.body(kept)) signer.update(chunk as Buffer);
  return { ...headers, ...signer.headers() };
}

/**
 * POSTs a kept request to `target.url`: same body bytes, same Content-Type, the same
 * `webhook-*` headers (or fresh signatures), `User-Agent: mediahook/<version>`. Never rejects.
 *
 * @example
 * const result = await sendKept(keeper, kept, { url, secrets: [], timeoutMs: 30_000 });
 */
export async function sendKept(
  keeper: KeptRequests,
  kept: KeptRequest,
  target: SendTarget,
): Promise<SendResult> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  try {
    const contentType = kept.headers.find(([name]) => name === 'content-type')?.[1] ?? '';
    const result = await postCallback({
      url: target.url,
      encoded: { contentType, contentLength: kept.bytes, body: () => keeper.body(kept) },
      headers: {
        ...(await headersFor(keeper, kept, target.secrets)),
        ...(target.via === undefined ? {} : { via: target.via }),
      },
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      responseTimeoutMs: target.timeoutMs,
    });
    return { status: result.statusCode, ms: ms(), errorBody: jsonErrorOf(result), failure: null };
  } catch (error) {
    const message = `cannot send to ${target.url.origin}: ${(error as Error).message}`;
    return { status: null, ms: ms(), errorBody: null, failure: { code: 'forward_failed', message } };
  }
}

/** An answer's body when it is a JSON error (`{"error": …}`), whole; else null. */
function jsonErrorOf(result: Awaited<ReturnType<typeof postCallback>>): string | null {
  const type = result.headers['content-type'];
  if (result.bodyTruncated || typeof type !== 'string' || !/\bjson\b/i.test(type)) return null;
  try {
    const text = result.body.toString('utf8');
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && 'error' in parsed ? text : null;
  } catch {
    return null;
  }
}
