import type { IncomingMessage } from 'node:http';
import { allowHalfOpen, serverOf } from './node-internals.ts';

/**
 * Lets a `node:http` server answer a sender that half-closes its connection once its request
 * is sent (as `nc -N` and some HTTP clients do). Node's default aborts the request in flight at
 * the sender's FIN and ends the connection, so a callback stored meanwhile would get no 200 and
 * be sent again. Allowed, the answer goes out and the connection closes after it; a body cut short by the FIN still fails
 * as `aborted`. The Node adapters do this themselves when the first callback arrives; call it
 * for a server whose requests reach the receiver through `webHandler`.
 *
 * @example
 * const server = serve({ fetch: webHandler(receiver), port: 9000 });
 * allowHalfOpenAnswers(server);
 */
export function allowHalfOpenAnswers(server: object): void {
  allowHalfOpen(server);
}

/** {@link allowHalfOpenAnswers} for the server `req` came through. */
export function answerAfterHalfClose(req: IncomingMessage): void {
  const server = serverOf(req);
  if (server) allowHalfOpenAnswers(server);
}
