import type { Readable } from 'node:stream';
import type { IncomingHttpHeaders } from 'node:http';
import { type Agent, type Dispatcher, errors as undiciErrors } from 'undici';
import {
  BodySigner,
  encodeCallback,
  type EncodedCallback,
  type OutgoingCallback,
  secretKey,
  userAgent,
} from 'mediahook/protocol';
import { isTlsErrorCode } from 'mediahook/internal';
import { parseRetryAfter } from './retry-after.ts';
import {
  checkWebhookUrl,
  createGuardedAgent,
  findSsrfRefusal,
  type GuardedConnectorOptions,
  type SsrfPolicy,
} from './ssrf/index.ts';
import type { Attempt } from '../client/api-types.ts';

/** How one attempt ended, before any schedule is applied. */
export type AttemptVerdict = 'delivered' | 'gone' | 'retry' | 'refused';

/** One delivery attempt, as the store records it: as the API shows it, and how it ended. */
export interface AttemptResult extends Attempt {
  verdict: AttemptVerdict;
  /** What the receiver's `Retry-After` asked for, in ms. */
  retry_after_ms: number | null;
}

export interface CallbackSenderOptions {
  /** Which webhook addresses may be dialled (default: public ones only). */
  ssrf?: SsrfPolicy | undefined;
  /** `whsec_…` secrets to sign with; none: unsigned. */
  secrets?: readonly string[] | undefined;
  /** Time to open a connection (10 s). */
  connectTimeoutMs?: number | undefined;
  /** Time for the answer once the body is sent, or for any pause in the upload (30 s). */
  responseTimeoutMs?: number | undefined;
  /** Slowest upload accepted, in bytes per second over the window, so a stalled receiver frees its slot. */
  minUploadBytesPerSecond?: number | undefined;
  /** The window the upload rate is measured over (10 s). */
  uploadStallWindowMs?: number | undefined;
  /** Bytes of the answer kept for the attempt record (1 KiB). */
  responseHeadBytes?: number | undefined;
  /** Connections kept per origin (keep-alive pool). */
  connectionsPerOrigin?: number | undefined;
  /** Resolver and dialler for the SSRF guard (tests inject recording ones). */
  guard?: GuardedConnectorOptions | undefined;
}

const STALL_WINDOW_MS = 10_000;

/**
 * How much of a body may still wait in socket buffers, at most, once the last of it has been
 * written: the answer's deadline allows for it at the minimum upload rate.
 */
const BUFFERED_BYTES = 1024 * 1024;

/**
 * How long the first bytes of an answer are waited for once its status is in. The status has
 * decided the attempt; the bytes only say more about it, and a receiver that trickles them (a
 * byte now and then, each within the body timeout) must not hold the slot meanwhile.
 */
const ANSWER_HEAD_MS = 5_000;

/** Why a send cancelled through its signal failed; the attempt's error starts with it. */
export const CANCELLED = 'cancelled: the sender was asked to stop';

/**
 * Sends callbacks over pooled keep-alive connections: Content-Length up front, the file
 * streamed, redirects never followed, the SSRF guard on every dialled address, the optional
 * signature, `User-Agent: mediahook/<version>`. Never throws for a network failure: every
 * outcome is an {@link AttemptResult}.
 *
 * @example
 * const sender = new CallbackSender({ secrets: ['whsec_…'] });
 * const attempt = await sender.send('https://client.example/hook', callback);
 * if (attempt.verdict === 'retry') schedule(attempt);
 */
export class CallbackSender {
  readonly #options: CallbackSenderOptions;
  readonly #agent: Agent;
  readonly #responseTimeoutMs: number;

  constructor(options: CallbackSenderOptions = {}) {
    // A secret that cannot sign is refused here, not at each send, where every callback would
    // fail the same way and never be delivered.
    for (const secret of options.secrets ?? []) secretKey(secret);
    this.#options = options;
    const responseTimeout = options.responseTimeoutMs ?? 30_000;
    this.#responseTimeoutMs = responseTimeout;
    this.#agent = createGuardedAgent(options.ssrf ?? {}, {
      ...options.guard,
      connect: options.guard?.connect ?? { timeout: options.connectTimeoutMs ?? 10_000 },
      agent: {
        headersTimeout: responseTimeout,
        bodyTimeout: responseTimeout,
        connections: options.connectionsPerOrigin ?? 32,
        keepAliveTimeout: 30_000,
        // undici 7 follows no redirect unless a redirect interceptor is added: none is.
      },
    });
  }

  /**
   * Encodes (and signs) a callback, then sends it once. Aborting `signal` ends the request at
   * once (connection closed) with a `retry` verdict whose error starts with {@link CANCELLED}.
   * `secrets`, when given, sign this callback in place of the sender's own (one client's).
   */
  async send(
    url: string,
    callback: OutgoingCallback,
    signal?: AbortSignal,
    secrets: readonly string[] = this.#options.secrets ?? [],
  ): Promise<AttemptResult> {
    const started = performance.now();
    const at = new Date().toISOString();
    let target: URL;
    try {
      target = checkWebhookUrl(url, this.#options.ssrf ?? {});
    } catch (error) {
      return failure(at, started, 'refused', refusalText(error));
    }
    const encoded = await encodeCallback(callback);
    const headers: Record<string, string> = {
      'content-type': encoded.contentType,
      'content-length': String(encoded.contentLength),
      'user-agent': userAgent(),
    };
    if (secrets.length > 0) {
      const signer = new BodySigner(secrets, callback.id_gen);
      const parts = encoded.inMemory();
      if (parts) for (const part of parts) signer.update(part);
      else for await (const chunk of encoded.body()) signer.update(chunk);
      Object.assign(headers, signer.headers());
    }
    return this.#post(target, encoded, headers, at, started, signal);
  }

  #post(
    url: URL,
    encoded: EncodedCallback,
    headers: Record<string, string>,
    at: string,
    started: number,
    signal: AbortSignal | undefined,
  ): Promise<AttemptResult> {
    const minRate = this.#options.minUploadBytesPerSecond ?? 16 * 1024;
    const stallWindow = this.#options.uploadStallWindowMs ?? STALL_WINDOW_MS;
    const headLimit = this.#options.responseHeadBytes ?? 1024;
    const responseTimeout = this.#responseTimeoutMs;
    // Written is not read: the last MiB of a body may still sit in socket buffers for a
    // receiver that reads slowly but steadily, and it has the minimum rate's time to take it
    // before its answer's time starts; a pause of the upload itself is the watchdog's.
    const bufferedMs =
      minRate > 0 ? Math.ceil((Math.min(encoded.contentLength, BUFFERED_BYTES) * 1000) / minRate) : 0;
    const headersTimeout = responseTimeout + bufferedMs;
    return new Promise<AttemptResult>((resolve) => {
      // undici hands over the means to abort once the request is on a connection; an abort
      // asked for before that is applied then.
      let controller: Dispatcher.DispatchController | null = null;
      let abortReason: Error | null = null;
      const abort = (reason: Error) => {
        abortReason ??= reason;
        controller?.abort(reason);
      };
      const cancel = () => abort(new Error(CANCELLED));
      if (signal?.aborted) cancel();
      signal?.addEventListener('abort', cancel, { once: true });

      let sent = 0;
      // The watch starts with the upload, once connected: the connect timeout is undici's.
      let windowStart = 0;
      let windowBytes = 0;
      let lastWrite = 0;
      let uploading = false;
      // A receiver that reads a byte now and then would keep the slot forever: require a rate;
      // and one that stops reading gets the response timeout, as one that does not answer.
      const watchdog = setInterval(
        () => {
          if (!uploading) return;
          const now = performance.now();
          if (now - lastWrite >= responseTimeout) {
            abort(new Error(`response_timeout: the upload paused for ${responseTimeout / 1000} s`));
            return;
          }
          if (now - windowStart < stallWindow) return;
          if (windowBytes < (minRate * (now - windowStart)) / 1000) {
            abort(new Error(`upload_stalled: fewer than ${minRate} B/s for ${stallWindow / 1000} s`));
          }
          windowStart = now;
          windowBytes = 0;
        },
        Math.min(1_000, stallWindow / 4, responseTimeout / 4),
      );
      watchdog.unref();

      let settled = false;
      let headTimer: NodeJS.Timeout | undefined;
      const settle = (result: AttemptResult) => {
        if (settled) return;
        settled = true;
        clearInterval(watchdog);
        clearTimeout(headTimer);
        signal?.removeEventListener('abort', cancel);
        resolve(result);
      };
      let status: number | null = null;
      let responseHeaders: IncomingHttpHeaders = {};
      const kept: Buffer[] = [];
      let keptBytes = 0;
      const answered = () => settle(answerOf(at, started, status!, headers, responseHeaders, kept));
      const failed = (error: unknown) => {
        const refusal = findSsrfRefusal(error);
        if (refusal) return settle(failure(at, started, 'refused', refusal.message, headers));
        const reason = abortReason ? abortReason.message : describeNetworkError(error);
        const why = `${reason} after ${sent} of ${encoded.contentLength} bytes`;
        settle(failure(at, started, 'retry', why, headers));
      };

      // undici takes the iterable as it is; a Readable around it would cost more than the request.
      async function* body(): AsyncGenerator<Buffer> {
        uploading = true;
        windowStart = performance.now();
        lastWrite = windowStart;
        for await (const chunk of encoded.inMemory() ?? encoded.body()) {
          sent += chunk.length;
          windowBytes += chunk.length;
          lastWrite = performance.now();
          yield chunk;
        }
        uploading = false;
      }
      // dispatch with a handler of its own rather than request(): no Readable for the answer,
      // whose first bytes are all that is kept, which costs a third less per callback.
      const handler: Dispatcher.DispatchHandler = {
        onRequestStart(c) {
          controller = c;
          if (abortReason) c.abort(abortReason);
        },
        onResponseStart(c, statusCode, responseHeadersIn) {
          if (statusCode < 200) return; // an interim answer (102, 103): the real one follows
          uploading = false;
          status = statusCode;
          responseHeaders = responseHeadersIn;
          headTimer = setTimeout(
            () => {
              answered();
              c.abort(new Error('the answer was read as long as it is waited for'));
            },
            Math.min(responseTimeout, ANSWER_HEAD_MS),
          );
        },
        onResponseData(c, chunk) {
          if (status === null) return;
          if (keptBytes < headLimit) {
            kept.push(chunk.subarray(0, headLimit - keptBytes));
            keptBytes += Math.min(chunk.length, headLimit - keptBytes);
          }
          // The rest is not needed: the status has decided, and this is all that is kept.
          if (keptBytes >= headLimit) {
            answered();
            c.abort(new Error('the answer was read as far as it is kept'));
          }
        },
        onResponseEnd: answered,
        onResponseError(_c, error) {
          // An answer whose body stalls or breaks off (within the response timeout) still counts
          // by its status; it only shortens what is kept of it.
          if (status !== null) answered();
          else failed(error);
        },
      };
      try {
        this.#agent.dispatch(
          {
            origin: url.origin,
            path: `${url.pathname}${url.search}`,
            method: 'POST',
            headers,
            headersTimeout,
            // An async iterable is a documented body (undici writes it with writeIterable); the
            // type declaration lists only Readable.
            body: body() as unknown as Readable,
          },
          handler,
        );
      } catch (error) {
        failed(error);
      }
    });
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

function failure(
  at: string,
  started: number,
  verdict: AttemptVerdict,
  error: string,
  requestHeaders: Record<string, string> | null = null,
): AttemptResult {
  return {
    at,
    duration_ms: Math.round(performance.now() - started),
    status_code: null,
    error,
    response_head: null,
    request_headers: requestHeaders,
    response_headers: null,
    verdict,
    retry_after_ms: null,
  };
}

/** The refusal as the attempt's error: an SsrfRefusedError's message already says who refused. */
function refusalText(error: unknown): string {
  const refusal = findSsrfRefusal(error);
  if (refusal) return refusal.message;
  return `refused by the SSRF guard: ${error instanceof Error ? error.message : String(error)}`;
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** An answer's headers as text, a repeated one (Set-Cookie) joined by `, `. */
function headerTexts(headers: IncomingHttpHeaders): Record<string, string> {
  const texts: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) texts[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return texts;
}

/** The attempt for an answer: its status decides; redirects are never followed. */
function answerOf(
  at: string,
  started: number,
  status: number,
  sentHeaders: Record<string, string>,
  headers: IncomingHttpHeaders,
  kept: readonly Buffer[],
): AttemptResult {
  const location = headerText(headers.location);
  const verdict: AttemptVerdict =
    status >= 200 && status < 300 ? 'delivered' : status === 410 ? 'gone' : 'retry';
  return {
    at,
    duration_ms: Math.round(performance.now() - started),
    status_code: status,
    // A 304 answers a conditional request, which a callback never is: no redirect, just a 3xx.
    error:
      status >= 300 && status < 400 && status !== 304
        ? `redirect not followed${location ? ` (Location: ${location})` : ''}`
        : null,
    // No bytes at all (a 204, an empty 200) is no answer to show, as for a failure.
    response_head: kept.length === 0 ? null : Buffer.concat(kept).toString('utf8'),
    request_headers: sentHeaders,
    response_headers: headerTexts(headers),
    verdict,
    retry_after_ms: verdict === 'retry' ? parseRetryAfter(headerText(headers['retry-after'])) : null,
  };
}

/** A short, stable description of a failure without an answer: its class first. */
function describeNetworkError(error: unknown): string {
  const code = (error as { code?: string }).code ?? (error as { cause?: { code?: string } }).cause?.code;
  if (error instanceof undiciErrors.ConnectTimeoutError)
    return 'connect_timeout: no connection within the limit';
  if (error instanceof undiciErrors.HeadersTimeoutError)
    return 'response_timeout: no answer within the limit';
  if (error instanceof undiciErrors.BodyTimeoutError) return 'response_timeout: the answer stalled';
  // undici drops the connection on a 100 Continue it did not ask for (it never asks), as
  // "bad response": the receiver answered, but not in a way the sender reads.
  if (code === 'UND_ERR_SOCKET' && error instanceof Error && error.message === 'bad response') {
    return 'bad_response: an interim 100 Continue that was not asked for';
  }
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection_refused: nothing listens at the address';
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
      return 'connection_reset: the receiver closed the connection';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `dns_failure: the host name did not resolve (${code})`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `unreachable: ${code}`;
    default: {
      // OpenSSL's messages span lines; an attempt's error is one.
      const message = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim();
      if (isTlsErrorCode(code)) return `tls_error: ${code} (${message})`;
      return `network_error: ${message}`;
    }
  }
}
