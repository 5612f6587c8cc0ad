import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { basename, join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import {
  allowedHostsOf,
  allowHalfOpenAnswers,
  deferContinue,
  hostAllowed,
  type NodeHandlerOptions,
  nodeHandler,
  type Receiver,
  type ReceiverOptions,
} from '../receiver/index.ts';
import { hostRefusal, warnOncePerHost } from '../receiver/adapters/host-guard.ts';
import { fileModesOf } from '../receiver/file-modes.ts';
import { keepingReceiver, type ListenOutcome } from './keeping-receiver.ts';
import { KeptRequests } from './kept-requests.ts';
import type { SendTarget } from './kept-sending.ts';
import { sendFileAnswer } from './file-response.ts';
import { sendRevalidated } from './revalidated-answer.ts';
import { inspectorServes } from './inspector-access.ts';
import { INSPECTOR_HEADERS, inspectorPage } from './inspector-page.ts';
import { OWN_PREFIX, replayIdOf, replayPathOf, replayRoute } from './replay-route.ts';
import { requestTargetOf } from './request-target.ts';

/**
 * The receiver's options and the adapter's, except that the Host check is on: `allowedHosts`
 * defaults to none besides IP addresses and loopback names, and covers the inspector's pages too
 * (421 there, 500 to a callback). `onHostRefused` is told of every refused request.
 */
export interface ListenServerOptions extends Omit<ReceiverOptions, 'onOutcome'>, NodeHandlerOptions {
  /** How many recent requests the inspector keeps. Default 500. */
  history?: number | undefined;
  /**
   * Raw requests kept for replay under `<out>/.requests/`: the newest `maxRequests` within
   * `maxBytes`, as `listen --keep-requests` (100) and `--keep-bytes` (1 GiB) ask. Default none
   * (while forwarding, each copy is removed once forwarded).
   */
  keep?: { maxRequests: number; maxBytes: number } | undefined;
  /** Send every accepted callback on to this app, and answer the sender with its answer. */
  forwardTo?: SendTarget | undefined;
  /** Told of every request's outcome, after the app answered a forwarded callback. */
  onOutcome?: ((outcome: ListenOutcome) => void) | undefined;
  /**
   * Shows the inspector, `/requests.json` and stored files to every client. By default only
   * loopback clients see them (others get 404); callbacks are taken from anywhere either way.
   */
  inspectorOpen?: boolean | undefined;
}

export interface ListenServer {
  server: Server;
  receiver: Receiver;
  /** The newest requests first. */
  recent(): readonly ListenOutcome[];
  /** The raw requests kept for replay; null when none are. */
  kept: KeptRequests | null;
  /**
   * Stops taking connections, lets requests in flight finish for `graceMs` (5 s), then cuts
   * off what is left and closes the receiver.
   */
  close(graceMs?: number): Promise<void>;
}

const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,200}\.(?:jpg|mp4)$/;

/**
 * The `mediahook listen` server: every POST, at any path but `/.mediahook/…` (the inspector's
 * Replay), is a callback for the receiver; `GET /` is the inspector, `GET /requests.json` its
 * data and `GET /files/NAME` a stored file, for loopback clients unless `inspectorOpen`.
 *
 * @example
 * const { server } = createListenServer({ out: './callbacks', onOutcome: console.log });
 * server.listen(9000);
 */
export function createListenServer(options: ListenServerOptions = {}): ListenServer {
  const history = options.history ?? 500;
  const recent: ListenOutcome[] = [];
  const keep = options.keep ?? { maxRequests: 0, maxBytes: 0 };
  const kept =
    keep.maxRequests > 0 || options.forwardTo
      ? KeptRequests.create(resolve(options.out ?? 'callbacks'), keep, fileModesOf(options))
      : null;
  const { receiver, within } = keepingReceiver(
    options,
    kept && { keeper: kept, forward: options.forwardTo ?? null },
    (outcome) => {
      recent.unshift(outcome);
      if (recent.length > history) recent.pop();
      options.onOutcome?.(outcome);
    },
  );
  const allowedHosts = options.allowedHosts ?? [];
  const hosts = allowedHostsOf(allowedHosts);
  const hostRefused = options.onHostRefused ?? warnOncePerHost();
  const receive = nodeHandler(receiver, { ...options, allowedHosts, onHostRefused: hostRefused });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.setHeader('x-content-type-options', 'nosniff');
    const path = requestTargetOf(req)?.pathname;
    // POSTs under /.mediahook/ are the inspector's own: every other POST is a callback.
    const own = req.method === 'POST' && path !== undefined && path.startsWith(OWN_PREFIX);
    if (req.method === 'POST' && !own) return within(req, () => receive(req, res));
    const host = req.headers.host;
    if (!hostAllowed(host, hosts)) {
      hostRefused(host!);
      return send(res, 421, 'application/json', errorJson('host_not_allowed', hostRefusal(host!).message));
    }
    // The Replay button is the inspector's: where the inspector is not shown, it is not there.
    const inspecting = inspectorServes(req.socket.remoteAddress, options.inspectorOpen === true);
    if (own) {
      const replayId = inspecting ? replayIdOf(path) : null;
      if (replayId === null)
        return send(res, 404, 'application/json', errorJson('not_found', `no route at ${path}`));
      return replayRoute(req, replayId, kept, options.forwardTo, (status, body) =>
        send(res, status, 'application/json', JSON.stringify(body)),
      );
    }
    if (path === undefined) {
      return send(
        res,
        400,
        'application/json',
        errorJson('invalid_request', 'the request target is not a valid URL'),
      );
    }
    // HEAD is GET without the body: Node leaves the body out of a HEAD answer by itself.
    const read = req.method === 'GET' || req.method === 'HEAD';
    // To a client it is not shown to, the inspector's pages are pages that do not exist.
    const shown = read && inspecting;
    if (shown && path === '/') {
      return send(res, 200, 'text/html; charset=utf-8', inspectorPage(), INSPECTOR_HEADERS);
    }
    if (shown && path === '/requests.json') {
      const replayable = options.forwardTo !== undefined && keep.maxRequests > 0;
      const list = recent.map((outcome) => publicOutcome(outcome, replayable));
      return sendRevalidated(req, res, JSON.stringify(list), {
        'content-type': 'application/json; charset=utf-8',
        'x-content-type-options': 'nosniff',
      });
    }
    if (shown && path.startsWith('/files/')) {
      return sendFile(res, receiver.out, fileNameOf(path));
    }
    if (!read) {
      res.setHeader('allow', 'GET, HEAD, POST');
      return send(
        res,
        405,
        'application/json',
        errorJson('method_not_allowed', `callbacks are POSTed, not ${req.method}`),
      );
    }
    return send(res, 404, 'application/json', errorJson('not_found', `no page at ${path}`));
  }

  // The requests being handled, so that closing waits for them before the store closes.
  const handling = new Set<Promise<void>>();
  const answer = (res: ServerResponse, routing: Promise<void>) => {
    const handled = routing.catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, 'application/json', errorJson('internal_error', String(error)));
      else res.destroy();
    });
    handling.add(handled);
    void handled.finally(() => handling.delete(handled));
  };
  // A callback is taken without a Host header (an HTTP/1.1 client owes one, but it names no
  // site here): refused by Node, it would get a bare 400 and no record.
  const server = createServer({ requireHostHeader: false }, (req, res) => answer(res, route(req, res)));
  // A sender that half-closes after its body still gets its 200 or 500, as does any request.
  allowHalfOpenAnswers(server);
  // A callback refused on its headers (too large, not multipart, unsigned) is answered before
  // a sender that asked `Expect: 100-continue` (curl, for files over 1 MiB) uploads its file.
  deferContinue(server, (req) => req.method === 'POST');
  // An expectation other than 100-continue cannot be met, and RFC 9110 §10.1.1 lets a server
  // ignore it: the callback is taken like any other, where Node would answer a bare 417 and
  // leave no record.
  server.on('checkExpectation', (req, res) => answer(res, route(req, res)));
  // Bytes Node cannot read as HTTP get a 500 with a code (or the callback's own answer).
  server.on('clientError', receive.clientError);
  // A large upload may take long; the receiver's idle timeout guards against stalls instead.
  server.requestTimeout = 0;
  server.headersTimeout = 15_000;

  return {
    server,
    receiver,
    recent: () => recent,
    kept,
    async close(graceMs = 5000) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // An upload still coming (or stalled) gets the grace to finish; then it is cut off, and
      // its receiver cleans up (no temporary file stays) before the store closes.
      const grace = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(grace);
      await Promise.race([Promise.all(handling), delay(1000, undefined, { ref: false })]);
      await receiver.close();
    },
  };
}

function errorJson(code: string, message: string): string {
  return JSON.stringify({ error: { code, message } });
}

function publicOutcome(outcome: ListenOutcome, replayable: boolean) {
  const callback = outcome.callback;
  const file = callback?.event === 'success' ? callback.file : null;
  // A duplicate's own bytes were dropped: it shows the file stored the first time.
  const path = file?.path ?? outcome.receipt?.file_path ?? null;
  return {
    verdict: outcome.verdict,
    receivedAt: outcome.receivedAt,
    durationMs: Math.round(outcome.durationMs * 10) / 10,
    error: outcome.error,
    headers: outcome.headers,
    forward: outcome.forward,
    // Only while the kept request may still be there: the route says so when it is not.
    replay: replayable && outcome.kept !== null ? replayPathOf(outcome.kept) : null,
    callback: callback && {
      event: callback.event,
      family: callback.family,
      status: callback.status,
      id_gen: callback.id_gen,
      time_gen: callback.time_gen,
      message: callback.event === 'error' ? callback.message : null,
      file: file && {
        url: path ? `/files/${encodeURIComponent(basename(path))}` : null,
        path,
        filename: file.filename,
        declaredType: file.declaredType,
        mediaType: file.mediaType,
        bytes: file.bytes,
        sha256: file.sha256,
      },
    },
  };
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Readonly<Record<string, string>> = {},
): void {
  res.writeHead(status, {
    ...headers,
    'content-type': type,
    'x-content-type-options': 'nosniff',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}

/** The file name in a `/files/NAME` path; a bad percent-encoding names no file. */
function fileNameOf(path: string): string {
  try {
    return decodeURIComponent(path.slice('/files/'.length));
  } catch {
    return '';
  }
}

async function sendFile(res: ServerResponse, directory: string, name: string): Promise<void> {
  // Only names the receiver itself gives: no separators, no dot-dot, a known extension.
  if (!FILE_NAME.test(name) || name.includes('..')) {
    return send(res, 404, 'application/json', errorJson('not_found', `no file ${name}`));
  }
  const sent = await sendFileAnswer(res, join(directory, name), {
    'content-type': name.endsWith('.mp4') ? 'video/mp4' : 'image/jpeg',
    'x-content-type-options': 'nosniff',
    // Another site's page cannot even embed it (<img src>), and learn from whether it loads.
    'cross-origin-resource-policy': 'same-origin',
    'cache-control': 'no-store',
  });
  if (!sent) send(res, 404, 'application/json', errorJson('not_found', `no file ${name}`));
}
