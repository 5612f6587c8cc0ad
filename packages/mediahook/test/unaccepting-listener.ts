/**
 * A loopback port where a TCP connect never completes, to test connect timeouts without dialling
 * anything but 127.0.0.1. A child process listens with a backlog of 1 and then blocks its event
 * loop, so it never accepts; this helper fills the accept queue with connections of its own,
 * and Linux then drops every further SYN: a new connect waits in SYN_SENT until its dialler
 * gives up.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

const LOOPBACK = '127.0.0.1';

/** The child: listen, print the port, then block for good (no accept ever runs). */
const LISTENER = `
const server = require('node:net').createServer();
server.listen({ port: 0, host: '${LOOPBACK}', backlog: 1 }, () => {
  process.stdout.write(server.address().port + '\\n', () =>
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0));
});`;

/** How long a connect may take before it counts as one that will not complete. */
const SETTLE_MS = 300;
const MAX_FILLERS = 16;

function connectsWithin(port: number, ms: number): Promise<Socket | null> {
  return new Promise((resolve) => {
    const socket = connect(port, LOOPBACK);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(null);
    }, ms);
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once('error', () => {
      clearTimeout(timer);
      resolve(null);
    });
  });
}

interface UnacceptingListener {
  port: number;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  close(): Promise<void>;
}

/** Starts the listener and fills its queue; resolves once a connect to it hangs. */
export async function startUnacceptingListener(): Promise<UnacceptingListener> {
  const child = spawn(process.execPath, ['-e', LISTENER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const fillers: Socket[] = [];
  const close = async () => {
    for (const socket of fillers) socket.destroy();
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }
  };
  try {
    const [line] = (await once(child.stdout, 'data')) as [Buffer];
    const port = Number(line.toString().trim());
    if (!Number.isInteger(port) || port <= 0) throw new Error(`the listener printed ${line.toString()}`);
    for (;;) {
      const socket = await connectsWithin(port, SETTLE_MS);
      if (!socket) break;
      fillers.push(socket);
      if (fillers.length > MAX_FILLERS) throw new Error('the accept queue never filled');
    }
    if (fillers.length === 0) throw new Error('no connection to the listener completed');
    return { port, origin: `http://${LOOPBACK}:${port}`, close };
  } catch (error) {
    await close();
    throw error;
  }
}
