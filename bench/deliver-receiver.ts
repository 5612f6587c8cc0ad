/**
 * The receiver every contender of the deliver suite sends to: a bare node:http server in a
 * child process of its own, so its work never shares an event loop (or a CPU time slice) with
 * the sender being measured. It reads each body to the end, answers 200, and notes when the
 * last byte arrived, on the machine's monotonic clock (`process.hrtime`), which all processes
 * of the machine share: the parent can subtract its own readings from these.
 *
 * Run as a script, it is the child; imported, {@link startReceiver} starts one and talks to it
 * over the IPC channel.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';

/** Milliseconds on the monotonic clock shared by every process of the machine. */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** What the receiver saw since the last {@link Receiver.take}. */
export interface Received {
  count: number;
  /** Requests whose body was shorter than the smallest callback expected (a broken send). */
  short: number;
  /** `[path, arrival ms on the monotonic clock]`, when asked for. */
  arrivals: [string, number][];
}

export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** What arrived since the last call, and starts counting afresh. */
  take(withArrivals: boolean): Promise<Received>;
  close(): Promise<void>;
}

type Request = { type: 'take'; arrivals: boolean; id: number };
type Reply = { type: 'ready'; port: number } | ({ type: 'taken'; id: number } & Received);

/** Starts the receiver child; `minBytes` is the smallest body it counts as a whole callback. */
export async function startReceiver(minBytes: number): Promise<Receiver> {
  const script = fileURLToPath(import.meta.url);
  const child: ChildProcess = spawn(process.execPath, [...process.execArgv, script, String(minBytes)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, (reply: Received) => void>();
  let nextId = 0;
  const ready = new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the receiver exited early (${code})`)));
    child.on('message', (reply: Reply) => {
      if (reply.type === 'ready') resolve(reply.port);
      else pending.get(reply.id)?.(reply);
    });
  });
  const timeout = setTimeout(() => child.kill(), 20_000);
  const port = await ready.finally(() => clearTimeout(timeout));
  child.removeAllListeners('exit');
  return {
    origin: `http://127.0.0.1:${port}`,
    take(withArrivals) {
      const id = nextId++;
      return new Promise<Received>((resolve) => {
        pending.set(id, (reply) => {
          pending.delete(id);
          resolve({ count: reply.count, short: reply.short, arrivals: reply.arrivals });
        });
        child.send({ type: 'take', arrivals: withArrivals, id } satisfies Request);
      });
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill();
      await exited;
    },
  };
}

/** The child: listen on a loopback port, report it, then serve until killed or orphaned. */
function serve(minBytes: number): void {
  let count = 0;
  let short = 0;
  let arrivals: [string, number][] = [];
  const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    req.on('end', () => {
      arrivals.push([req.url ?? '', monotonicMs()]);
      count++;
      if (bytes < minBytes) short++;
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end('ok');
    });
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no TCP address');
    process.send?.({ type: 'ready', port: address.port } satisfies Reply);
  });
  process.on('message', (message: Request) => {
    if (message.type !== 'take') return;
    const reply: Reply = {
      type: 'taken',
      id: message.id,
      count,
      short,
      arrivals: message.arrivals ? arrivals : [],
    };
    process.send?.(reply);
    count = 0;
    short = 0;
    arrivals = [];
  });
  // The parent gone (even killed), nobody will stop this server: leave with it.
  process.on('disconnect', () => process.exit(0));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) serve(Number(process.argv[2] ?? 0));
