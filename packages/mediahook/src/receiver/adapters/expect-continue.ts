import type { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { beforeFirstRead } from './node-internals.ts';

/**
 * Which requests' `100 Continue` waits for the receiver: a callback path, several, or a test
 * of the request. A path matches `POST` requests to exactly that path (the query aside).
 */
export type ContinueRoute = string | readonly string[] | ((req: IncomingMessage) => boolean);

/**
 * Requests that asked `Expect: 100-continue` on a deferred route, with the response that
 * answers them, until a mediahook handler claims them (it then sends the `100 Continue`).
 */
const deferred = new WeakMap<IncomingMessage, ServerResponse>();

/** Per server, the routes whose `100 Continue` waits; one `checkContinue` listener serves them all. */
const routesOf = new WeakMap<EventEmitter, ((req: IncomingMessage) => boolean)[]>();

function matcherOf(route: ContinueRoute): (req: IncomingMessage) => boolean {
  if (typeof route === 'function') return route;
  const paths = new Set(typeof route === 'string' ? [route] : route);
  return (req) => req.method === 'POST' && paths.has((req.url ?? '/').split('?', 1)[0]!);
}

/** A route test that throws defers nothing: the request goes on as Node would have taken it. */
function matchesSafely(matches: (req: IncomingMessage) => boolean, req: IncomingMessage): boolean {
  try {
    return matches(req);
  } catch {
    return false;
  }
}

/**
 * Adds `route` to the server's deferred routes. Returns false, and changes nothing, when the
 * server answers `checkContinue` with a listener of its own.
 */
export function deferContinueOn(server: EventEmitter, route: ContinueRoute): boolean {
  let routes = routesOf.get(server);
  if (!routes) {
    if (server.listenerCount('checkContinue') > 0) return false;
    const list: ((req: IncomingMessage) => boolean)[] = [];
    routes = list;
    routesOf.set(server, list);
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      if (list.some((matches) => matchesSafely(matches, req))) defer(req, res);
      else res.writeContinue();
      server.emit('request', req, res);
    });
  }
  routes.push(matcherOf(route));
  return true;
}

/**
 * Makes a Node HTTP server (`node:http`, `node:https`, Express's `app.listen()`,
 * @hono/node-server's `serve()`) answer `Expect: 100-continue` on the callback routes only once
 * the callback's headers pass (size, Content-Type, signature headers): a refused callback gets
 * its 500 before the sender uploads the file. Node otherwise answers `100 Continue` to every such request before any
 * handler sees it. Other routes get `100 Continue` at once, as before. The routes must be
 * served by a mediahook handler (`nodeHandler`, `expressHandler`, `honoHandler`): it is the one
 * that sends the `100 Continue` once it starts reading the body. The Fastify plugin does this
 * by itself. Call it again to add routes.
 *
 * @example
 * const server = app.listen(9000); // Express
 * deferContinue(server, '/callbacks');
 */
export function deferContinue(server: EventEmitter, route: ContinueRoute): void {
  if (!deferContinueOn(server, route)) {
    throw new Error(
      'the server already has a checkContinue listener of its own; mediahook cannot defer 100 Continue beside it',
    );
  }
}

/**
 * Marks a request whose `100 Continue` waits. Should anything but a mediahook handler read its
 * body (a body parser in front, a route that is not the receiver's), the first read sends the
 * `100 Continue` as Node would have, so the sender is never left waiting.
 */
function defer(req: IncomingMessage, res: ServerResponse): void {
  deferred.set(req, res);
  beforeFirstRead(req, () => {
    // Sent now, and no longer the receiver's to send: one 100 Continue per request.
    if (deferred.delete(req)) sendContinue(res);
  });
}

/** Sends `100 Continue` on `res` unless its answer already started. */
export function sendContinue(res: ServerResponse): void {
  if (!res.headersSent && !res.destroyed) res.writeContinue();
}

/**
 * For a handler about to read `req`'s body: when its `100 Continue` was deferred, takes that
 * answer over and returns what sends it (once the callback's headers pass); otherwise null.
 */
export function claimContinue(req: IncomingMessage): (() => void) | null {
  const res = deferred.get(req);
  if (!res) return null;
  deferred.delete(req);
  return () => sendContinue(res);
}

/** `body`, with `send()` called when the reader starts on it. */
export function continuingOnRead<T>(body: AsyncIterable<T>, send: () => void): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      send();
      return body[Symbol.asyncIterator]();
    },
  };
}
