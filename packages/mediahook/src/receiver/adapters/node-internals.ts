/**
 * The only places mediahook reads or sets `node:http` internals, each with why no public API
 * serves. A Node release that moves one breaks this file's tests, not the adapters' behaviour
 * silently (test/receiver/node-internals.test.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Whether a response is still being written on `socket`. Node keeps the response it owes in
 * `socket._httpMessage`; a `clientError` answer written then would land inside that response.
 */
export function answerOwedOn(socket: Duplex): boolean {
  return Boolean((socket as Duplex & { _httpMessage?: unknown })._httpMessage);
}

/**
 * Makes a `node:http` server answer a request whose sender half-closed after sending it.
 * `httpAllowHalfOpen` is the server's own switch (a property since Node 0.x, with no option).
 */
export function allowHalfOpen(server: object): void {
  const flagged = server as { httpAllowHalfOpen?: boolean };
  if (flagged.httpAllowHalfOpen === false) flagged.httpAllowHalfOpen = true;
}

/** The server a request came through: `socket.server`, set by `net` on accepted sockets. */
export function serverOf(req: IncomingMessage): object | undefined {
  return (req.socket as { server?: object } | null)?.server ?? undefined;
}

/**
 * Calls `first` once, just before the first read of `req`'s body by anyone. A readable emits
 * no event before it pulls from its source, so `_read` (the pull itself) is wrapped.
 */
export function beforeFirstRead(req: IncomingMessage, first: () => void): void {
  const stream = req as unknown as { _read(size: number): void };
  const read = stream._read;
  stream._read = function firstRead(this: IncomingMessage, size: number) {
    stream._read = read;
    first();
    read.call(this, size);
  };
}
