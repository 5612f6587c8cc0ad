/**
 * A TCP proxy on loopback in front of a server (PostgreSQL at 127.0.0.1:5432): cutting it
 * drops every connection through it, as a network fault or a server restart would, without
 * touching the server that other tests share.
 */
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

interface TcpProxy {
  /** The port it listens on, on 127.0.0.1. */
  port: number;
  /** Connections cut so far (each a client and its server side). */
  cuts(): number;
  /** Cuts every connection and refuses new ones (closed as soon as made) until `up`. */
  down(): void;
  /** Lets connections through again. */
  up(): void;
  /** `down`, and `up` again `forMs` later. */
  cut(forMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let refusing = false;
  let cut = 0;
  const server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const down = () => {
    refusing = true;
    cut += Math.ceil(open.size / 2);
    for (const socket of open) socket.destroy();
  };
  return {
    port: (server.address() as AddressInfo).port,
    cuts: () => cut,
    down,
    up: () => void (refusing = false),
    async cut(forMs) {
      down();
      await new Promise((resolve) => setTimeout(resolve, forMs));
      refusing = false;
    },
    async close() {
      for (const socket of open) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

/** `url` (a postgres:// URL) dialled through `proxy` instead. */
export function throughProxy(url: string, proxy: TcpProxy): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(proxy.port);
  return parsed.href;
}
