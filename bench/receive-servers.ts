/**
 * One callback server of the receive suite, in a process of its own:
 * `receive-servers.ts <kind> <out-dir>`, driven by bench/receive.ts over IPC (receive-proc.ts).
 *
 * Every server that stores stores the same way: the file's bytes go into the project's DiskSink
 * (temporary file, writev batches, fsync, atomic rename to `<id_gen>.<ext>`, directory fsync),
 * so the disk work is identical and the figures differ only by what comes before the sink.
 */
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { join } from 'node:path';
import {
  createReceiver,
  MemoryReceiptStore,
  nodeHandler,
  type Receipt,
  type ReceiptStore,
} from '../packages/mediahook/src/receiver/index.ts';
import { fullGc, peakRssMiB, resetPeakRss, rssMiB } from './harness.ts';
import { answer, CountedSink, counts, listen, pipeToSink, sendJson, track, work } from './receive-common.ts';
import { SERVER_KINDS, type ServerKind } from './receive-kinds.ts';
import { serveCommands } from './receive-proc.ts';

/** What a server counted since the last `clean`, and what its out directory holds. */
export interface ServerCounts {
  /** Requests answered 200 (raw-tcp: connections that ended). */
  ok: number;
  /** Requests answered otherwise, or aborted. */
  failed: number;
  /** Files committed, and their bytes, by the server's own count. */
  stored: number;
  storedBytes: number;
  /** Body bytes received (raw servers only). */
  receivedBytes: number;
  /** What the out directory held before it was emptied. */
  files: number;
  fileBytes: number;
  /** Temporary files left behind (should be none). */
  partial: number;
  /** CPU time of the whole server process (all threads, user + system), in µs. */
  cpuMicros: number;
}

/** The longest a server lives: a forgotten one must not outlive the benchmark by much. */
const LIFETIME_MS = 20 * 60_000;

/**
 * Receipts in memory for one run: `clean` empties the out directory, and these receipts go with
 * the files they name. Kept across runs, tens of thousands of them would be ours' alone to carry
 * (no peer keeps a record), and every full garbage collection would mark them again.
 */
class RunReceipts implements ReceiptStore {
  #receipts = new MemoryReceiptStore();
  get(idGen: string) {
    return this.#receipts.get(idGen);
  }
  add(receipt: Receipt) {
    return this.#receipts.add(receipt);
  }
  list(options?: { limit?: number }) {
    return this.#receipts.list(options);
  }
  close() {
    return this.#receipts.close();
  }
  forget(): void {
    this.#receipts = new MemoryReceiptStore();
  }
}

const runReceipts = new RunReceipts();

/** Ours: node:http + nodeHandler + createReceiver, receipts in memory, files in `out`. */
async function ours(out: string): Promise<number> {
  const receiver = createReceiver({
    out,
    store: runReceipts,
    onSuccess: (callback) => {
      counts.stored++;
      counts.storedBytes += callback.file.bytes;
    },
  });
  const handle = nodeHandler(receiver);
  const server = createServer((req, res) => {
    work.busy++;
    void handle(req, res).finally(() => work.busy--);
  });
  track(server);
  return listen(server);
}

/** The practical limit of HTTP: read the body, answer 200; no parsing, no storing. */
async function rawHttp(): Promise<number> {
  const server = createServer((req, res) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    req.once('end', () => {
      counts.receivedBytes += bytes;
      sendJson(res, 200, answer(''));
    });
  });
  track(server);
  return listen(server);
}

/**
 * The ceiling of any receiver on the shared sink: no parsing, no checks, the whole request body
 * into the same DiskSink (writev batches, fsync, rename, directory fsync), named by a counter.
 * What a server answers beyond this one comes from storing less, not from parsing faster.
 */
async function rawSink(out: string): Promise<number> {
  let stored = 0;
  const server = createServer((req, res) => {
    const sink = new CountedSink(out);
    pipeToSink(req, sink)
      .then(() => sink.close())
      .then(() => sink.commit(join(out, `${(stored++).toString(36)}.bin`)))
      .then(
        () => sendJson(res, 200, answer('')),
        async (error: unknown) => {
          await sink.abort();
          sendJson(res, 500, JSON.stringify({ error: String(error) }));
        },
      );
  });
  track(server);
  return listen(server);
}

/** The limit of loopback itself: count the bytes of a connection, answer the count when it ends. */
async function rawTcp(): Promise<number> {
  const server = createTcpServer((socket) => {
    let bytes = 0;
    socket.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    socket.once('end', () => {
      counts.receivedBytes += bytes;
      counts.ok++;
      socket.end(`${bytes}\n`);
    });
    socket.once('error', () => counts.failed++);
  });
  return listen(server);
}

/** Waits until no request is in flight (the load generator has stopped, aborted ones cleaned up). */
async function idle(timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  const pending = () => work.active > 0 || work.busy > 0;
  while (pending() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  if (pending()) throw new Error(`still busy after ${timeoutMs} ms`);
}

let cpuSince = process.cpuUsage();

/** Counts what the out directory holds, then empties it and resets the counters. */
async function clean(out: string): Promise<ServerCounts> {
  await idle(5_000);
  const cpu = process.cpuUsage(cpuSince);
  const names = await readdir(out).catch(() => [] as string[]);
  let files = 0;
  let fileBytes = 0;
  let partial = 0;
  for (let i = 0; i < names.length; i += 256) {
    const batch = names.slice(i, i + 256);
    const sizes = await Promise.all(batch.map((name) => stat(join(out, name)).then((s) => s.size)));
    batch.forEach((name, k) => {
      if (name.endsWith('.part')) partial++;
      else {
        files++;
        fileBytes += sizes[k]!;
      }
    });
  }
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  runReceipts.forget();
  const result: ServerCounts = { ...counts, files, fileBytes, partial, cpuMicros: cpu.user + cpu.system };
  Object.assign(counts, { ok: 0, failed: 0, stored: 0, storedBytes: 0, receivedBytes: 0 });
  cpuSince = process.cpuUsage();
  return result;
}

async function main(): Promise<void> {
  const [kind, out] = process.argv.slice(2) as [ServerKind, string];
  if (!SERVER_KINDS.includes(kind) || !out) throw new Error('usage: receive-servers.ts <kind> <out-dir>');
  await mkdir(out, { recursive: true });
  // A peer's framework is loaded only in the process that runs it.
  const peers = () => import('./receive-peers.ts');
  const start: Record<ServerKind, (out: string) => Promise<number>> = {
    ours,
    fastify: async (dir) => (await peers()).fastify(dir),
    express: async (dir) => (await peers()).expressServer(dir),
    'fastify-fs': async (dir) => (await peers()).fastifyFs(dir),
    'express-fs': async (dir) => (await peers()).expressFsServer(dir),
    hono: async (dir) => (await peers()).hono(dir),
    busboy: async (dir) => (await peers()).busboyServer(dir),
    'busboy-fs': async (dir) => (await peers()).busboyFsServer(dir),
    'raw-http': rawHttp,
    'raw-sink': rawSink,
    'raw-tcp': rawTcp,
  };
  const port = await start[kind](out);
  let baseline = 0;
  serveCommands(
    port,
    {
      clean: () => clean(out),
      /** Before a memory figure: a clean heap, its RSS, and the peak mark reset to it. */
      mark: async () => {
        await idle(5_000);
        fullGc();
        baseline = rssMiB();
        return { rss: baseline, reset: resetPeakRss() };
      },
      memory: async () => ({ baseline, peak: peakRssMiB(), rss: rssMiB() }),
    },
    LIFETIME_MS,
    () => rm(out, { recursive: true, force: true }),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
