/**
 * One POST on a connection of its own, up to the answer's status: the streamed upload and the
 * timers that watch it. Node's http client has no connect timeout and no notion of a receiver
 * that stops reading, so both are timers of ours, armed and re-armed as the socket moves.
 */
import { type ClientRequest, type IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { EncodedCallback } from '../protocol/index.ts';
import { userAgent } from '../protocol/version.ts';
import { failure } from './post-error.ts';

/** What postCallback sends: an encoded callback, or any body of a known size. */
export type PostBody = Pick<EncodedCallback, 'contentType' | 'contentLength' | 'body'>;

/** The body of a POST and the timers that watch its upload and answer. */
export interface UploadOptions {
  encoded: PostBody;
  /** Time to open the connection (TCP and TLS). */
  connectTimeoutMs: number;
  /**
   * Time the receiver may stop reading the upload, or take to answer once the body is sent;
   * and, once the status came, the longest the rest of the answer is waited for.
   */
  responseTimeoutMs: number;
  /** Called as the socket takes bytes of the body, with the running total. */
  onProgress?: ((sent: number) => void) | undefined;
}

interface ExchangeOptions extends UploadOptions {
  /** Where to POST, without credentials. */
  target: URL;
  /** Every request header but Host, Content-Type, Content-Length and User-Agent. */
  headers: Record<string, string>;
}

/**
 * The largest write handed to the socket: the stall timer only learns of progress when a whole
 * write is flushed, so a receiver reading slowly but steadily re-arms it every 64 KiB.
 */
const SLICE_BYTES = 64 * 1024;

/**
 * A POST in flight. `start()` resolves with the answer as soon as its status and headers come,
 * even while the body is still being sent (the upload then stops), and rejects with what ended
 * it otherwise; `close()` ends the connection whatever happened.
 *
 * @example
 * const exchange = new Exchange({ encoded, target, headers: {}, connectTimeoutMs: 10_000,
 *   responseTimeoutMs: 30_000 });
 * try { const response = await exchange.start(); … } finally { exchange.close(); }
 */
export class Exchange {
  /** Body bytes the socket took. */
  sent = 0;
  /** True once the whole body was handed to the socket. */
  uploaded = false;
  private request: ClientRequest | undefined;
  private connected = false;
  /** True once the answer came or the exchange failed: nothing more is written. */
  private settled = false;
  private closed = false;
  /** Writes handed to the request and not yet flushed to the socket. */
  private pending = 0;
  /** Bytes of an answer arrived before its headers were complete. */
  private answerBegun = false;
  private connectTimer: NodeJS.Timeout | undefined;
  private stallTimer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  /** Resolves once connected, or once the exchange is over without a connection. */
  private readonly ready: Promise<void>;
  private onReady: () => void = () => {};
  private resolve: (response: IncomingMessage) => void = () => {};
  private reject: (error: unknown) => void = () => {};

  constructor(private readonly options: ExchangeOptions) {
    this.ready = new Promise((resolve) => (this.onReady = resolve));
  }

  start(): Promise<IncomingMessage> {
    const answer = new Promise<IncomingMessage>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    const { options } = this;
    const { target } = options;
    // From the start: the host name's lookup is part of connecting.
    this.connectTimer = setTimeout(() => this.fail(failure('connect_timeout')), options.connectTimeoutMs);
    try {
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const request = send({
        hostname: target.hostname.replace(/^\[(.*)\]$/, '$1'), // an IPv6 literal, unbracketed
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: 'POST',
        agent: false, // a connection of its own, never pooled
        headers: {
          ...options.headers,
          host: target.host,
          'content-type': options.encoded.contentType,
          'content-length': String(options.encoded.contentLength),
          'user-agent': userAgent(),
        },
      });
      // No `Connection: close` (HTTP/1.1 keeps it open by default): a receiver that answers
      // before the whole body came then drains the rest rather than closing on it, which can
      // reset the connection before the answer is read. We close it once the answer is in.
      request.removeHeader('connection');
      this.request = request;
      request.on('socket', (socket) => this.watch(socket));
      request.on('response', (response) => this.answered(response));
      // An interim 1xx answer: the receiver is alive, the final status is still to come.
      request.on('continue', () => this.rearm());
      request.on('information', () => this.rearm());
      request.on('error', (error) => this.fail(error));
      this.upload(request).catch((error: unknown) => this.fail(error));
    } catch (error) {
      this.fail(error); // an unusable header value, say
    }
    return answer;
  }

  /**
   * Ends the connection, the answer's too. The upload lets go of its source at its next chunk;
   * it is not waited for, as a source may be slow to give one.
   */
  close(): void {
    this.closed = true;
    this.settle();
    this.request?.destroy();
  }

  private watch(socket: Socket): void {
    const ready = socket instanceof TLSSocket ? 'secureConnect' : 'connect';
    socket.once(ready, () => {
      clearTimeout(this.connectTimer);
      this.connected = true;
      this.onReady();
      this.rearm();
    });
    socket.once('data', () => {
      this.answerBegun = true;
    });
  }

  /**
   * The stall timer runs while the socket holds bytes it has not sent, or once the body is
   * sent and the status is awaited; not while the body's source is being read.
   */
  private rearm(): void {
    clearTimeout(this.stallTimer);
    if (this.settled || !this.connected || (!this.uploaded && this.pending === 0)) return;
    this.stallTimer = setTimeout(() => this.stalled(), this.options.responseTimeoutMs);
  }

  private stalled(): void {
    if (!this.uploaded) this.fail(failure('upload_stalled'));
    else this.fail(failure(this.answerBegun ? 'answer_stalled' : 'response_timeout'));
  }

  private async upload(request: ClientRequest): Promise<void> {
    const { encoded } = this.options;
    // Nothing is written before the connection is up: a TLS handshake that fails then fails
    // as itself (ERR_SSL_…, a certificate code), not as the write that was waiting on it.
    await this.ready;
    if (this.settled) return;
    let queued = 0;
    for await (const chunk of encoded.body()) {
      queued += chunk.length;
      if (queued > encoded.contentLength) {
        throw failure('body_length_mismatch', `the body is longer than its ${encoded.contentLength} bytes`);
      }
      for (let at = 0; at < chunk.length && !this.settled; at += SLICE_BYTES) {
        if (!this.write(request, chunk.subarray(at, at + SLICE_BYTES))) await this.drained(request);
      }
      if (this.settled) return; // leaving the loop closes the source
    }
    if (queued < encoded.contentLength) {
      throw failure(
        'body_length_mismatch',
        `the body ended at ${queued} of its ${encoded.contentLength} bytes`,
      );
    }
    request.end(() => {
      this.uploaded = true;
      this.rearm();
    });
  }

  private write(request: ClientRequest, slice: Buffer): boolean {
    this.pending += 1;
    const room = request.write(slice, (error) => {
      this.pending -= 1;
      if (error || this.closed) return;
      this.sent += slice.length;
      this.options.onProgress?.(this.sent);
      this.rearm();
    });
    this.rearm();
    return room;
  }

  /** Until the request's buffer drains, or the exchange is over. */
  private drained(request: ClientRequest): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        request.off('drain', done);
        this.wake = undefined;
        resolve();
      };
      this.wake = done;
      request.once('drain', done);
    });
  }

  private answered(response: IncomingMessage): void {
    if (this.settled) return;
    this.settle();
    this.resolve(response);
  }

  private fail(error: unknown): void {
    if (this.settled) return; // after the answer, its reading tells what went wrong
    this.settle();
    this.reject(error);
    this.request?.destroy();
  }

  private settle(): void {
    this.settled = true;
    clearTimeout(this.connectTimer);
    clearTimeout(this.stallTimer);
    this.onReady();
    this.wake?.();
  }
}
