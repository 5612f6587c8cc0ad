import type { IncomingMessage } from 'node:http';

interface HalfOpenServer {
  httpAllowHalfOpen?: boolean;
}

/**
 * Lets `req`'s server answer a sender that half-closes its connection once its body is sent
 * (as `nc -N` and some HTTP clients do). Node's default aborts the request in flight at the
 * sender's FIN and ends the connection, so a callback stored meanwhile would get no 200 and be
 * sent again. With `httpAllowHalfOpen` (a `node:http` server property since Node 0.x) the answer
 * goes out and the connection closes after it; a body cut short by the FIN still fails as
 * `aborted`. Set on the server the request came through, the first time a callback arrives.
 */
export function answerAfterHalfClose(req: IncomingMessage): void {
  const server = (req.socket as { server?: HalfOpenServer } | null)?.server;
  if (server?.httpAllowHalfOpen === false) server.httpAllowHalfOpen = true;
}
