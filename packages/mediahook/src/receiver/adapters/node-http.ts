import { type IncomingMessage, STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import type { Receiver, ReceiverRequest, ReceiverResponse } from '../receiver.ts';
import { ReceiverError } from '../receiver-error.ts';
import {
  type BodyGuardOptions,
  type BodyGuards,
  bodyGuardsOf,
  failableBody,
  guardsOn,
  idleTimeoutError,
  requestTimeoutError,
  slowBodyError,
} from './body-guards.ts';
import { clientErrorOf, type HttpClientError } from './client-error.ts';
import { claimContinue, continuingOnRead, sendContinue } from './expect-continue.ts';
import { answerAfterHalfClose } from './half-close.ts';
import { hostGuardOf, type HostGuardOptions } from './host-guard.ts';
import { answerOwedOn } from './node-internals.ts';

/** The body guards of a Node request (`BodyGuardOptions`) and the opt-in Host check (`HostGuardOptions`). */
export interface NodeHandlerOptions extends BodyGuardOptions, HostGuardOptions {}

/** A request whose body some earlier middleware may have read. */
type MaybeParsed = IncomingMessage & { body?: unknown };

/** What `body_consumed` advises, for an app on node:http or Express. */
const NODE_CONSUMED_ADVICE =
  'mount the receiver before it, or keep the raw bytes ' +
  '(express.raw({ type: "multipart/form-data", limit: "1025mb" }), the limit above the file limit)';

/**
 * Where the body comes from: a raw Buffer a framework kept, or the live stream (`stream`, the
 * request itself unless a framework hands its route another one). A stream something else has
 * already started reading is refused with `body_consumed` (and `advice`): the bytes it took
 * are gone, and the receiver would otherwise blame the sender for a malformed callback.
 */
function nodeBodyOf(
  req: MaybeParsed,
  advice = NODE_CONSUMED_ADVICE,
  stream: Readable = req,
): ReceiverRequest['body'] {
  const parsed = req.body;
  if (parsed instanceof Uint8Array) return parsed;
  const emptyObject = typeof parsed === 'object' && parsed !== null && Object.keys(parsed).length === 0;
  const hasBody =
    req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (parsed !== undefined && !emptyObject) {
    throw new ReceiverError(
      'body_consumed',
      `a body parser already read this request and its exact bytes are gone; ${advice}`,
    );
  }
  // A listener that only watches the bytes go by is harmless until the first of them has gone.
  if (stream.readableDidRead || (stream.readableEnded && hasBody)) {
    throw new ReceiverError(
      'body_consumed',
      `something already read ${stream.readableEnded ? 'all' : 'part'} of this request's body, and the ` +
        `bytes it took are gone; ${advice}`,
    );
  }
  return stream;
}

/** A request header by lower-case name, repeated values joined. */
export function headerOf(req: IncomingMessage, name: string): string | undefined {
  // Node keeps only the first of two Content-Types; joined, as a Web Request has them, a body
  // framed by one of them is not taken on the say-so of the other.
  // (A request made up in tests, as Fastify's inject() makes them, may have no headersDistinct.)
  const distinct = req.headersDistinct as IncomingMessage['headersDistinct'] | undefined;
  if (name === 'content-type' && distinct) return distinct[name]?.join(', ');
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * How long the rest of a refused upload is still read, at most, once the answer is out.
 * Closing a connection while the sender is still uploading makes the kernel reset it, and a
 * sender that had not read the answer by then loses it: it sees "connection reset" instead of
 * the error code.
 */
const LINGER_MS = 2_000;

/** Writes a receiver's answer to a Node response. */
function sendNodeResponse(res: ServerResponse, response: ReceiverResponse): void {
  if (res.headersSent || res.destroyed) return;
  const headers: Record<string, string | number> = {
    ...response.headers,
    'content-length': Buffer.byteLength(response.body),
  };
  if (response.closeConnection) headers['connection'] = 'close';
  const req = res.req as IncomingMessage | undefined;
  if (response.closeConnection && req) lingerWhileUploading(req);
  res.writeHead(response.status, headers);
  res.end(response.body);
}

/**
 * A lingering close, as web servers do it, for a refusal whose body is still coming; to be
 * called before an answer with `Connection: close` is written, by whatever writes it. Node
 * closes such a connection with `socket.destroySoon()`: our side is shut, then the socket
 * destroyed, reset by the kernel with the upload still arriving. For this socket only, the
 * destroy waits until the sender closes its side too, or LINGER_MS passes; meanwhile the rest
 * of the body is read and dropped. Does nothing for a body already whole or gone.
 */
export function lingerWhileUploading(req: IncomingMessage): void {
  if (req.complete || req.destroyed) return;
  req.socket.destroySoon = function lingeringClose(this: Socket) {
    closeLingering(this);
  };
  // read() rather than resume(): a reader the receiver abandoned midway may still listen for
  // 'readable', and then the stream would not flow.
  const drop = () => {
    while (req.read() !== null);
  };
  req.on('readable', drop);
  drop();
}

/** Shuts our side (after `last`); destroys the socket once the sender shuts its own, or at LINGER_MS. */
function closeLingering(socket: Duplex, last?: Buffer): void {
  socket.end(last);
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

/**
 * Writes an answer straight to a socket that Node's HTTP server gave up on, then closes it,
 * lingering as `lingerWhileUploading` does: a sender still writing would otherwise be reset
 * before it reads the answer.
 */
function answerOnSocket(socket: Duplex, response: ReceiverResponse): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = Buffer.from(response.body);
  const head = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}`];
  for (const [name, value] of Object.entries(response.headers)) head.push(`${name}: ${value}`);
  head.push(`content-length: ${body.length}`, 'connection: close', '', '');
  closeLingering(socket, Buffer.concat([Buffer.from(head.join('\r\n'), 'latin1'), body]));
}

/**
 * Aborted when the connection closes, or the sender shuts its side, before the answer is out:
 * the sender is gone, and a copy waiting for another process to finish the same callback need
 * not wait any longer.
 */
export function goneSignal(res: ServerResponse): AbortSignal {
  const gone = new AbortController();
  // The server answers after a sender's FIN (see answerAfterHalfClose), so the request no longer
  // ends with it: a copy waiting for another holder takes the FIN as its sender leaving.
  const socket = res.req.socket;
  const left = () => gone.abort();
  socket.once('end', left);
  res.once('close', () => {
    socket.off('end', left);
    if (!res.writableFinished) gone.abort();
  });
  return gone.signal;
}

/** Fails a body that keeps trickling: fewer than the minimum rate over a whole window. */
function watchRate(req: IncomingMessage, guards: BodyGuards, fail: (error: Error) => void): void {
  const socket = req.socket;
  let mark = socket.bytesRead;
  const timer = setInterval(() => {
    const read = socket.bytesRead - mark;
    mark = socket.bytesRead;
    if (read < guards.leastPerWindow) fail(slowBodyError(guards));
  }, guards.rateWindowMs);
  timer.unref();
  const stop = () => clearInterval(timer);
  req.once('end', stop);
  req.once('close', stop);
}

/**
 * Calls `fail` with a `timeout` error when the request's body sends nothing for the idle
 * timeout, arrives slower than the minimum rate, or is not whole by the request timeout
 * (`bodyGuardsOf` the options); all stop once the body is in. `fail` fails the reads of the
 * body (`failableBody`), leaving the connection open for the answer.
 */
export function watchBody(req: IncomingMessage, guards: BodyGuards, fail: (error: Error) => void): void {
  if (req.complete) return;
  if (guards.rateWindowMs > 0) watchRate(req, guards, fail);
  if (guards.requestMs > 0) {
    // A body the parser has whole is in, though the receiver may not have read all of it yet.
    const timer = setTimeout(() => {
      if (!req.complete) fail(requestTimeoutError(guards.requestMs));
    }, guards.requestMs);
    timer.unref();
    const stop = () => clearTimeout(timer);
    req.once('end', stop);
    req.once('close', stop);
  }
  // A request made up in tests (Fastify's inject()) has no socket timer to watch with.
  if (guards.idleMs > 0 && typeof req.setTimeout === 'function') {
    // With a listener of ours, Node leaves the socket open on its timeout.
    req.setTimeout(guards.idleMs, () => fail(idleTimeoutError(guards.idleMs)));
    // The timer is for a silent sender only: once the body is in, a handler slower than the
    // timeout must not have its connection dropped (the socket timer outlives the body).
    req.once('end', () => req.setTimeout(0));
  }
}

/**
 * The body for the receiver, as `nodeBodyOf` finds it. When that is the live request, it is
 * watched by the guards and, with `sendOnRead`, sends a deferred `100 Continue` as the receiver
 * starts reading it.
 */
export function guardedNodeBody(
  req: MaybeParsed,
  guards: BodyGuards,
  sendOnRead: (() => void) | null,
  onFailable?: (fail: (error: Error) => void) => void,
  from?: { stream: Readable; advice: string },
): ReceiverRequest['body'] {
  const stream = from?.stream ?? req;
  const body = nodeBodyOf(req, from?.advice, stream);
  if (body !== stream) return body;
  const live: AsyncIterable<Uint8Array> = sendOnRead ? continuingOnRead(stream, sendOnRead) : stream;
  if (req.complete || (!guardsOn(guards) && !onFailable)) return live;
  // The guards watch the connection: a stream handed on by a framework has no socket of its own.
  return failableBody(live, (fail) => {
    if (guardsOn(guards)) watchBody(req, guards, fail);
    onFailable?.(fail);
  });
}

/** A `(req, res)` handler, with entries for `Expect: 100-continue` and for unreadable HTTP. */
export type NodeHandler = ((req: IncomingMessage, res: ServerResponse) => Promise<void>) & {
  /**
   * For `server.on('checkContinue', …)`: the same handler, but `100 Continue` is sent only
   * once the request's headers pass (size, Content-Type, signature headers), so the sender of
   * a refused callback gets its 500 before it uploads the file. Without this listener Node
   * answers `100 Continue` to every request before any handler sees it.
   */
  checkContinue: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /**
   * For `server.on('clientError', …)`: bytes Node cannot read as HTTP. Without it Node writes
   * a bare `400` and closes the connection, even over the answer to a callback still being
   * processed (bytes after its body, a `Content-Length` shorter than the body). With it, that
   * callback's own 200 or 500 goes out, then the connection closes; a body cut off by the
   * error fails as `aborted` or `malformed_request`; and a request that never got as far as
   * the handler is answered 500 with its code, and reported to `onOutcome`, like any other.
   */
  clientError: (error: Error, socket: Duplex) => void;
};

/** The request being answered on a connection, and how to fail its body's reads. */
interface InFlight {
  res: ServerResponse;
  fail: ((error: Error) => void) | null;
}

/**
 * A `(req, res)` handler for `node:http` (and Express, Connect and anything else built on it).
 *
 * @example
 * import http from 'node:http';
 * const handler = nodeHandler(createReceiver({ out: './callbacks' }));
 * const server = http.createServer(handler).listen(9000);
 * server.on('checkContinue', handler.checkContinue); // optional: refuse before the upload
 * server.on('clientError', handler.clientError); // optional: 500 with a code for broken HTTP
 * // behind a tunnel: answer its name too, and IP addresses and localhost (DNS rebinding)
 * nodeHandler(receiver, { allowedHosts: ['abc.tunnel.example'] });
 */
export function nodeHandler(receiver: Receiver, options: NodeHandlerOptions = {}): NodeHandler {
  const guards = bodyGuardsOf(options);
  const hostGuard = hostGuardOf(options);
  const inFlight = new WeakMap<Duplex, InFlight>();
  const refused = new WeakSet<Duplex>();
  // Per connection, when the answer to its latest request is out (or the connection gone).
  const answered = new WeakMap<Duplex, Promise<void>>();
  const handle = async (req: IncomingMessage, res: ServerResponse, continueOnRead: boolean) => {
    // Claimed before anything reads the body: the 100 Continue then waits for the headers' checks.
    answerAfterHalfClose(req);
    const deferredContinue = continueOnRead ? () => sendContinue(res) : claimContinue(req);
    const header = (name: string) => headerOf(req, name);
    const before = answered.get(req.socket);
    answered.set(req.socket, new Promise((resolve) => res.once('close', resolve)));
    if (before) {
      // Pipelined: Node hands over the next request at once. Callbacks are taken one at a
      // time per connection, in order, and none after an answer that closed the connection
      // (RFC 9112 §9.3.2 lets only safe methods be processed side by side; §9.6).
      await before;
      if (req.socket.destroyed || !req.socket.writable) return;
    }
    const current: InFlight = { res, fail: null };
    inFlight.set(req.socket, current);
    res.once('finish', () => {
      if (inFlight.get(req.socket) === current) inFlight.delete(req.socket);
    });
    let body: ReceiverRequest['body'];
    try {
      const refusal = hostGuard?.(req.headers.host);
      if (refusal) throw refusal;
      body = guardedNodeBody(req, guards, deferredContinue, (fail) => (current.fail = fail));
    } catch (error) {
      sendNodeResponse(
        res,
        await receiver.handle({ header, body: null, failure: error, method: req.method }),
      );
      return;
    }
    sendNodeResponse(
      res,
      await receiver.handle({ header, body, signal: goneSignal(res), method: req.method }),
    );
  };
  const clientError = (error: HttpClientError, socket: Duplex) => {
    // Node reports every further chunk of a broken connection again: answer it once.
    if (refused.has(socket)) return;
    refused.add(socket);
    const current = inFlight.get(socket);
    if (current) {
      // Nothing after this request is read as a request: its answer closes the connection.
      if (current.res.headersSent) current.res.once('finish', () => socket.end());
      else current.res.shouldKeepAlive = false;
      if (current.res.req.complete) return;
      if (current.fail) current.fail(clientErrorOf(error));
      else socket.destroy();
      return;
    }
    // Another route's answer still owed on this connection is not ours to write over.
    const owed = answerOwedOn(socket);
    // A connection that never sent a byte (a browser's preconnect, a health probe's TCP check)
    // made no request: it is closed when its time is up, with no answer and no record.
    const silent = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' && (socket as Partial<Socket>).bytesRead === 0;
    if (owed || !socket.writable || error.code === 'ECONNRESET' || silent) {
      socket.destroy();
      return;
    }
    const failure = clientErrorOf(error, 'headers');
    receiver
      .handle({ header: () => undefined, body: null, failure })
      .then((response) => answerOnSocket(socket, response))
      .catch(() => socket.destroy());
  };
  return Object.assign((req: IncomingMessage, res: ServerResponse) => handle(req, res, false), {
    checkContinue: (req: IncomingMessage, res: ServerResponse) => handle(req, res, true),
    clientError,
  });
}
