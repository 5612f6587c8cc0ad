/**
 * A misbehaving receiver on 127.0.0.1: per request, chosen from the seed, the `id_gen` in the
 * path and the attempt number, it answers 200, 500, 429 with Retry-After, 302 or 410, hangs
 * past the sender's timeout, resets the connection mid-body, or reads very slowly. It records
 * what it did with every request, so the store's attempts can be checked against it.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { rng } from './rng.ts';

export const BEHAVIOURS = [
  'ok',
  'error500',
  'retry429',
  'redirect',
  'gone',
  'hang',
  'reset',
  'slowRead',
] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

/** Relative weights: mostly failures, so many callbacks go through several attempts. */
const WEIGHTS: Record<Behaviour, number> = {
  ok: 30,
  error500: 16,
  retry429: 10,
  redirect: 5,
  gone: 1,
  hang: 12,
  reset: 16,
  slowRead: 10,
};

export interface ChaosRequest {
  /** The key in the webhook path (the callback's index). */
  id: string;
  attempt: number;
  behaviour: Behaviour;
  /** The status this server sent, or null when it sent none (hang, reset, stalled read). */
  answered: number | null;
}

interface ChaosReceiver {
  /** The webhook URL of the callback with this key. */
  url(key: string): string;
  readonly requests: ChaosRequest[];
  /** Requests per key, in arrival order. */
  byId(): Map<string, ChaosRequest[]>;
  /** Connections open now. */
  openConnections(): Promise<number>;
  /** Slow reads still draining what a sender left in the socket buffers. */
  slowReadsInProgress(): number;
  close(): Promise<void>;
}

/** What the receiver does with attempt `attempt` (1-based) of `key`: the same for a given seed. */
function behaviourFor(seed: number, id: string, attempt: number): Behaviour {
  let h = seed >>> 0;
  for (const ch of `${id}#${attempt}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  const random = rng(h);
  const total = Object.values(WEIGHTS).reduce((a, b) => a + b, 0);
  let pick = random.next() * total;
  for (const behaviour of BEHAVIOURS) {
    pick -= WEIGHTS[behaviour];
    if (pick < 0) return behaviour;
  }
  return 'ok';
}

export async function startChaosReceiver(seed: number, slowReadPauseMs: number): Promise<ChaosReceiver> {
  const requests: ChaosRequest[] = [];
  const attempts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let slowReads = 0;

  const answer = (
    res: ServerResponse,
    record: ChaosRequest,
    status: number,
    headers: Record<string, string> = {},
  ) => {
    res.writeHead(status, { 'content-type': 'text/plain', ...headers });
    res.end(`chaos ${record.behaviour}`);
    record.answered = status;
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const id = decodeURIComponent(req.url?.split('/').pop() ?? '');
    const attempt = (attempts.get(id) ?? 0) + 1;
    attempts.set(id, attempt);
    const record: ChaosRequest = { id, attempt, behaviour: behaviourFor(seed, id, attempt), answered: null };
    requests.push(record);
    const afterBody = (then: () => void) => {
      req.resume();
      req.once('end', then);
    };
    switch (record.behaviour) {
      case 'ok':
        return afterBody(() => answer(res, record, 200));
      case 'error500':
        return afterBody(() => answer(res, record, 500));
      case 'retry429':
        return afterBody(() => answer(res, record, 429, { 'retry-after': '1' }));
      case 'redirect':
        return afterBody(() => answer(res, record, 302, { location: 'http://127.0.0.1:1/elsewhere' }));
      case 'gone':
        return afterBody(() => answer(res, record, 410));
      case 'hang':
        // The body is read, no answer ever comes: the sender's response timeout must end it.
        // Node keeps a half-closed socket open for the answer it still owes: closed here, so
        // that descriptors left open at the end are the sender's, not this server's.
        req.socket.once('end', () => req.socket.destroy());
        return req.resume();
      case 'reset':
        // A TCP reset as soon as some of the body is in: for a file callback, mid-body.
        return void req.once('data', () => req.socket.resetAndDestroy());
      case 'slowRead': {
        // 16 KiB per pause, for a while: a large upload stalls below the sender's minimum rate
        // (which ends it), a small one fits in the socket buffers and gets its answer late.
        // Then the rest is drained at full speed, so the socket sees the sender's close soon.
        req.pause();
        req.socket.once('end', () => req.socket.destroy());
        slowReads++;
        req.socket.once('close', () => slowReads--);
        let steps = 0;
        const step = () => {
          const timer = setTimeout(() => {
            timers.delete(timer);
            if (req.destroyed || req.readableEnded) return;
            if (++steps > 15) return void req.resume();
            req.read(16 * 1024);
            step();
          }, slowReadPauseMs);
          timers.add(timer);
        };
        req.once('end', () => answer(res, record, 200));
        step();
        return;
      }
    }
  });
  // Idle keep-alive connections stay open for the whole run: the sender never races a close.
  server.keepAliveTimeout = 10 * 60_000;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: (id) => `http://127.0.0.1:${port}/cb/${encodeURIComponent(id)}`,
    requests,
    byId() {
      const map = new Map<string, ChaosRequest[]>();
      for (const request of requests) map.set(request.id, [...(map.get(request.id) ?? []), request]);
      return map;
    },
    slowReadsInProgress: () => slowReads,
    openConnections: () => new Promise((resolve) => server.getConnections((_error, n) => resolve(n))),
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
