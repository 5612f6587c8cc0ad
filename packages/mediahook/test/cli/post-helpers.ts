/**
 * What the postCallback suites share: bodies of any size that are never held whole, receivers
 * on loopback (Node's http server, or a raw socket for answers Node would not write), closed
 * after each test by {@link closeAll}.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { expect } from 'vitest';
import { PostError, type PostOptions, type PostResult, postCallback } from '../../src/cli/post-callback.ts';

export const MiB = 1024 * 1024;

const closers: (() => Promise<void>)[] = [];

/** Closes every server the last test started; each suite calls it from its afterEach. */
export async function closeAll(): Promise<void> {
  for (const close of closers.splice(0)) await close();
}

function closeServer(server: Server): () => Promise<void> {
  return () => new Promise((resolve) => server.close(() => resolve()));
}

/** `size` bytes of body, yielded `chunk` bytes at a time from one buffer. */
export function zeros(size: number, chunk = MiB): PostOptions['encoded'] {
  const block = Buffer.alloc(Math.min(size, chunk));
  return {
    contentType: 'application/octet-stream',
    contentLength: size,
    async *body() {
      for (let left = size; left > 0; left -= block.length)
        yield block.subarray(0, Math.min(left, block.length));
    },
  };
}

export function text(value: string): PostOptions['encoded'] {
  const bytes = Buffer.from(value);
  return {
    contentType: 'text/plain',
    contentLength: bytes.length,
    async *body() {
      yield bytes;
    },
  };
}

/** A Node http server on `host`; resolves with its `http://host:port/hook` URL. */
export async function serve(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  host = '127.0.0.1',
): Promise<URL> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  closers.push(() => {
    server.closeAllConnections();
    return closeServer(server)();
  });
  const { port } = server.address() as AddressInfo;
  return new URL(`http://${host.includes(':') ? `[${host}]` : host}:${port}/hook`);
}

/** A TCP server on 127.0.0.1 that hands each connection to `onSocket`, for answers by hand. */
export async function serveRaw(onSocket: (socket: Socket) => void): Promise<URL> {
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    onSocket(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => {
    for (const socket of sockets) socket.destroy();
    return closeServer(server)();
  });
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
}

/** Reads a request's head off a raw socket, then calls `then` with the body bytes seen so far. */
export function afterHead(socket: Socket, then: (bodyBytes: number) => void): void {
  let head = '';
  const onData = (chunk: Buffer) => {
    head += chunk.toString('latin1');
    const end = head.indexOf('\r\n\r\n');
    if (end === -1) return;
    socket.off('data', onData);
    then(head.length - end - 4);
  };
  socket.on('data', onData);
}

/** postCallback with 2 s timeouts unless told otherwise. */
export function post(
  url: URL,
  encoded: PostOptions['encoded'],
  extra: Partial<PostOptions> = {},
): Promise<PostResult> {
  return postCallback({ url, encoded, connectTimeoutMs: 2000, responseTimeoutMs: 2000, ...extra });
}

/** The PostError a post rejects with. */
export async function failureOf(posting: Promise<unknown>): Promise<PostError> {
  const error = await posting.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(PostError);
  return error as PostError;
}
