/**
 * One request written byte for byte on a fresh loopback connection, whatever the body holds,
 * and the answer read back. A server that answers before reading the whole body (a refusal)
 * may close the connection under the writer: the answer still counts, the write error does not.
 */
import { connect, type Socket } from 'node:net';

interface RawAnswer {
  /** The status code, or null when the connection ended without one. */
  status: number | null;
  body: string;
  /** Whether writing the request failed (the server closed it early). */
  writeFailed: boolean;
}

export function rawRequest(
  port: number,
  head: string,
  body: Buffer | readonly Buffer[],
  timeoutMs = 30_000,
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let writeFailed = false;
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (data: Buffer) => received.push(data));
    socket.on('error', () => {
      writeFailed = true;
    });
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(received).toString('utf8');
      const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
      const split = text.indexOf('\r\n\r\n');
      resolve({
        status: match ? Number(match[1]) : null,
        body: split >= 0 ? text.slice(split + 4) : '',
        writeFailed,
      });
    });
    socket.on('connect', async () => {
      socket.write(head);
      for (const chunk of Array.isArray(body) ? body : [body]) {
        if (socket.destroyed) return;
        // Waiting for the buffer to drain keeps a 100 MiB body from being held in memory.
        if (!socket.write(chunk)) await drainedOrClosed(socket);
      }
    });
  });
}

function drainedOrClosed(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}

/** The head of a POST with a Content-Length; `Connection: close` so the answer ends the exchange. */
export function postHead(contentType: string | null, length: number, path = '/hook'): string {
  return (
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n` +
    (contentType === null ? '' : `Content-Type: ${contentType}\r\n`) +
    `Content-Length: ${length}\r\n\r\n`
  );
}

/** The `error.code` of a JSON error answer, or null. */
export function errorCode(answer: RawAnswer): string | null {
  try {
    return (JSON.parse(answer.body) as { error?: { code?: string } }).error?.code ?? null;
  } catch {
    return null;
  }
}
