/**
 * Receivers on 127.0.0.1 for the delivery tests: a node:http server that records every request
 * (path, headers, timing, overlap per `id_gen`) and answers through a per-request script,
 * falling back to the real receiver (createReceiver + nodeHandler). Nothing here ever listens
 * on, or points a sender at, anything but loopback.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createReceiver,
  MemoryReceiptStore,
  nodeHandler,
  type ReceiverOptions,
  type ReceiverOutcome,
} from '../../../mediahook/src/receiver/index.ts';

export const LOOPBACK = '127.0.0.1';

/** One request as the receiver saw it. */
export interface SeenRequest {
  /** 1-based, in arrival order. */
  n: number;
  path: string;
  /** The `id_gen` the test put in the webhook path (`/hook/<id_gen>`), else null. */
  id: string | null;
  headers: IncomingMessage['headers'];
  startedAt: number;
  /** When the answer was sent or the connection dropped; null while in flight. */
  endedAt: number | null;
  status: number | null;
}

/** What the script does with one request; `real` hands it to the real receiver. */
type Answer =
  | 'real'
  /** Reads the body, then never answers (until the test ends). */
  | 'hang'
  /** Reads the body, then destroys the connection without an answer. */
  | 'reset'
  | { status: number; headers?: Record<string, string>; body?: string; delayMs?: number };

export type Script = (request: SeenRequest) => Answer;

export interface RecordingReceiver {
  readonly port: number;
  /** `http://127.0.0.1:<port>/hook/<id>`: the id in the path lets the recorder tell requests apart. */
  url(id: string): string;
  readonly requests: SeenRequest[];
  readonly outcomes: ReceiverOutcome[];
  /** TCP connections accepted, ever. */
  connections: number;
  /** Requests for one `id_gen` that were in flight at the same time as another for it. */
  readonly overlaps: string[];
  /** Most requests in flight at once. */
  maxInFlight: number;
  script: Script;
  /** Drops every open connection (held requests end without an answer). */
  dropConnections(): void;
  /** Ids with at least one request, in first-arrival order. */
  ids(): string[];
  /** Requests per id. */
  countsById(): Map<string, number>;
  close(): Promise<void>;
}

interface RecordingReceiverOptions extends Pick<ReceiverOptions, 'secret'> {
  script?: Script | undefined;
}

/** A loopback HTTP receiver that records everything and answers by `script` (default: real). */
export async function startRecordingReceiver(
  options: RecordingReceiverOptions = {},
): Promise<RecordingReceiver> {
  const out = mkdtempSync(join(tmpdir(), 'mediahook-receiver-'));
  const outcomes: ReceiverOutcome[] = [];
  const real = createReceiver({
    out,
    store: new MemoryReceiptStore(),
    secret: options.secret,
    onOutcome: (outcome) => outcomes.push(outcome),
  });
  const handle = nodeHandler(real, { idleTimeoutMs: 0 });
  const inFlight = new Map<string, number>();
  const sockets = new Set<Socket>();
  let open = 0;

  const state: RecordingReceiver = {
    port: 0,
    url: (id) => `http://${LOOPBACK}:${state.port}/hook/${id}`,
    requests: [],
    outcomes,
    connections: 0,
    overlaps: [],
    maxInFlight: 0,
    script: options.script ?? (() => 'real'),
    dropConnections() {
      for (const socket of sockets) socket.destroy();
    },
    ids: () => [...new Set(state.requests.flatMap((r) => (r.id === null ? [] : [r.id])))],
    countsById() {
      const counts = new Map<string, number>();
      for (const r of state.requests) if (r.id !== null) counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
      return counts;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await real.close();
      rmSync(out, { recursive: true, force: true });
    },
  };

  function begin(req: IncomingMessage): SeenRequest {
    const path = req.url ?? '';
    const id = /^\/hook\/([^/?]+)/.exec(path)?.[1] ?? null;
    const seen: SeenRequest = {
      n: state.requests.length + 1,
      path,
      id,
      headers: req.headers,
      startedAt: Date.now(),
      endedAt: null,
      status: null,
    };
    state.requests.push(seen);
    open += 1;
    state.maxInFlight = Math.max(state.maxInFlight, open);
    if (id !== null) {
      const concurrent = (inFlight.get(id) ?? 0) + 1;
      inFlight.set(id, concurrent);
      if (concurrent > 1) state.overlaps.push(id);
    }
    return seen;
  }

  function end(seen: SeenRequest, res: ServerResponse): void {
    if (seen.endedAt !== null) return;
    seen.endedAt = Date.now();
    seen.status = res.headersSent ? res.statusCode : null;
    open -= 1;
    if (seen.id !== null) inFlight.set(seen.id, (inFlight.get(seen.id) ?? 1) - 1);
  }

  const server = createServer((req, res) => {
    const seen = begin(req);
    // Whichever comes first: the answer finished, or the connection went away without one.
    res.on('finish', () => end(seen, res));
    res.on('close', () => end(seen, res));
    const answer = state.script(seen);
    if (answer === 'real') {
      void handle(req, res);
      return;
    }
    req.resume();
    req.on('end', () => {
      if (answer === 'hang') return;
      if (answer === 'reset') {
        req.socket.destroy();
        return;
      }
      const reply = () => {
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? '');
      };
      if (answer.delayMs) setTimeout(reply, answer.delayMs);
      else reply();
    });
  });
  server.on('connection', (socket) => {
    state.connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
  (state as { port: number }).port = (server.address() as AddressInfo).port;
  return state;
}

/**
 * A TCP server on loopback that accepts connections and never reads a byte from them; or, with
 * `resetAfterBytes`, reads that many and then drops the connection mid-upload.
 */
export async function startDeafServer(
  options: { resetAfterBytes?: number } = {},
): Promise<{ port: number; connections: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    result.connections += 1;
    const limit = options.resetAfterBytes;
    if (limit === undefined) {
      socket.pause();
      return;
    }
    let read = 0;
    socket.on('data', (chunk) => {
      read += chunk.length;
      if (read >= limit) socket.resetAndDestroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
  const result = {
    port: (server.address() as AddressInfo).port,
    connections: 0,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return result;
}
