/**
 * Long-lived child processes for the receive suite (servers and the load generator), driven by
 * request/answer messages over the IPC channel. Every child ends by itself: when its parent goes
 * away (the channel closes) or when its lifetime is over, whatever the parent does.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

interface Call {
  id: number;
  cmd: string;
  args: unknown;
}

type Answer = { id: number; result: unknown } | { id: number; error: string };

/** First message of a child: it is listening (servers) or ready to load. */
interface Ready {
  ready: true;
  port: number;
}

export interface Worker {
  readonly pid: number;
  /** The port a server child listens on (0 for the load generator). */
  readonly port: number;
  call<T>(cmd: string, args?: unknown, timeoutMs?: number): Promise<T>;
  /** Asks the child to leave, then kills it if it has not left within a few seconds. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
// A failing suite must not leave children behind: they would hold ports and temp files.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts `script` (a .ts file next to this one) in a fresh Node process with the same loader
 * flags (tsx), and waits until it says it is ready.
 */
export function startWorker(
  script: string,
  args: string[],
  nodeFlags: readonly string[] = [],
  readyTimeoutMs = 30_000,
): Promise<Worker> {
  const path = fileURLToPath(new URL(script, import.meta.url));
  const child = fork(path, args, {
    execArgv: [...process.execArgv, ...nodeFlags],
    // A child's stdout would mix with the tables; its errors still show on stderr.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  running.add(child);
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  let nextId = 1;
  let exited = false;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = true;
      running.delete(child);
      for (const { reject } of pending.values()) {
        reject(new Error(`${script} ${args.join(' ')} exited (${code ?? signal}) during a call`));
      }
      pending.clear();
      resolve();
    });
  });

  return new Promise<Worker>((resolveReady, rejectReady) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      rejectReady(new Error(`${script} ${args.join(' ')} was not ready within ${readyTimeoutMs} ms`));
    }, readyTimeoutMs);
    void exit.then(() => {
      clearTimeout(timer);
      rejectReady(new Error(`${script} ${args.join(' ')} exited before it was ready`));
    });
    child.on('message', (message: Ready | Answer) => {
      if ('ready' in message) {
        clearTimeout(timer);
        resolveReady(worker(message.port));
        return;
      }
      const call = pending.get(message.id);
      if (!call) return;
      pending.delete(message.id);
      if ('error' in message) call.reject(new Error(`${args[0] ?? script}: ${message.error}`));
      else call.resolve(message.result);
    });
  });

  function worker(port: number): Worker {
    return {
      pid: child.pid!,
      port,
      call<T>(cmd: string, callArgs?: unknown, timeoutMs = 120_000): Promise<T> {
        if (exited) return Promise.reject(new Error(`${script} ${args.join(' ')} has exited`));
        const id = nextId++;
        return new Promise<T>((resolve, reject) => {
          const timer = setTimeout(() => {
            pending.delete(id);
            child.kill('SIGKILL');
            reject(new Error(`${args[0] ?? script}: ${cmd} took over ${timeoutMs} ms`));
          }, timeoutMs);
          pending.set(id, {
            resolve: (value) => {
              clearTimeout(timer);
              resolve(value as T);
            },
            reject: (error) => {
              clearTimeout(timer);
              reject(error);
            },
          });
          child.send({ id, cmd, args: callArgs } satisfies Call);
        });
      },
      async stop() {
        if (exited) return;
        // Closing the channel is the child's signal to leave (see serveCommands).
        child.disconnect();
        const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exit;
        clearTimeout(killer);
      },
    };
  }
}

/**
 * In a child: answers the parent's calls with `handlers`, tells it `port` once ready, and leaves
 * when the parent closes the channel or after `lifetimeMs`, whichever comes first.
 */
export function serveCommands(
  port: number,
  handlers: Record<string, (args: any) => Promise<unknown>>,
  lifetimeMs: number,
  onExit: () => Promise<void> = async () => {},
): void {
  const send = (message: Ready | Answer) => process.send?.(message);
  const leave = (code: number) => {
    void onExit()
      .catch(() => {})
      .finally(() => process.exit(code));
  };
  process.on('message', (message: Call) => {
    const handler = handlers[message.cmd];
    if (!handler) {
      send({ id: message.id, error: `unknown command ${message.cmd}` });
      return;
    }
    handler(message.args).then(
      (result) => send({ id: message.id, result }),
      (error: unknown) =>
        send({ id: message.id, error: error instanceof Error ? error.message : String(error) }),
    );
  });
  process.once('disconnect', () => leave(0));
  setTimeout(() => {
    process.stderr.write(`receive bench child ${process.argv.slice(2).join(' ')}: lifetime over\n`);
    leave(2);
  }, lifetimeMs).unref();
  send({ ready: true, port });
}
