/**
 * Cloudflare's workerd serving a module worker, driven directly by a generated config: no
 * miniflare, which wants a newer Node than the one the tests may run on.
 *
 * The worker is a directory of ES modules, every `.js` file in it a module named by its path
 * within the directory, so relative imports between them resolve as they do on disk. workerd
 * listens on 127.0.0.1 and a port of its choosing, and reports that port on a control pipe
 * (`--control-fd`), so there is no race for a port picked beforehand.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';

interface WorkerdOptions {
  /** The worker's directory of modules. */
  directory: string;
  /** The main module, its path relative to `directory` (`worker.js`). */
  main: string;
  /** Default a recent date this workerd supports. */
  compatibilityDate?: string;
  /** Default `['nodejs_compat']`. */
  compatibilityFlags?: readonly string[];
  /** How long to wait for the first answer (ms, 15 s). */
  startTimeoutMs?: number;
}

interface WorkerdServer {
  /** `http://127.0.0.1:<port>/` */
  url: string;
  /** What workerd wrote to stdout and stderr so far: its logs and the worker's console. */
  output(): string;
  /** Stops workerd and removes its config. */
  stop(): Promise<void>;
}

/**
 * The date the tests run the worker at, a recent one. From 2026-08-04 on nodejs_compat is on by
 * default, and workerd says on stderr that the flag is not needed; it is still set, as projects
 * created before then, and the templates, have it.
 */
export const COMPATIBILITY_DATE = '2026-11-01';

/** Every `.js` and `.mjs` file under `directory`, as module names (paths with `/`), sorted. */
async function modulesOf(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && /\.m?js$/.test(entry.name))
    .map((entry) => relative(directory, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort();
}

/** A Cap'n Proto text string. */
function capnpString(value: string): string {
  return JSON.stringify(value);
}

/**
 * The config: one worker service, one HTTP socket on 127.0.0.1 and any port. `embed` paths are
 * relative to the config file (absolute ones are not read), so each module is named by its path
 * from the config's own temporary directory, `base`.
 */
function configOf(modules: string[], base: string, options: WorkerdOptions): string {
  const main = options.main.split(sep).join('/');
  const flags = options.compatibilityFlags ?? ['nodejs_compat'];
  // The main module comes first: workerd takes the first module as the entry point.
  const ordered = [main, ...modules.filter((name) => name !== main)];
  const lines = ordered.map(
    (name) => `    (name = ${capnpString(name)}, esModule = embed ${capnpString(`${base}/${name}`)}),`,
  );
  return [
    'using Workerd = import "/workerd/workerd.capnp";',
    'const config :Workerd.Config = (',
    '  services = [(name = "main", worker = .worker)],',
    '  sockets = [(name = "http", address = "127.0.0.1:0", http = (), service = "main")],',
    ');',
    'const worker :Workerd.Worker = (',
    '  modules = [',
    ...lines,
    '  ],',
    `  compatibilityDate = ${capnpString(options.compatibilityDate ?? COMPATIBILITY_DATE)},`,
    `  compatibilityFlags = [${flags.map(capnpString).join(', ')}],`,
    ');',
    '',
  ].join('\n');
}

/** The port from workerd's control messages: `{"event":"listen","socket":"http","port":N}`. */
function listenPort(control: Readable): Promise<number> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    control.setEncoding('utf8');
    control.on('data', (text: string) => {
      buffered += text;
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        try {
          const message = JSON.parse(line) as { event?: string; socket?: string; port?: number };
          if (message.event === 'listen' && message.socket === 'http' && message.port) resolve(message.port);
        } catch {
          // not a message of ours
        }
      }
    });
    control.on('end', () => reject(new Error('workerd closed its control pipe without listening')));
  });
}

/** One HTTP answer from `url` (any status): the worker is loaded and serving. */
function answers(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = request(url, { method: 'GET', headers: { connection: 'close' } }, (response) => {
      response.resume();
      response.on('end', resolve);
      response.on('error', reject);
    });
    probe.on('error', reject);
    probe.end();
  });
}

function exitOf(child: ChildProcess): string {
  return child.signalCode ? `killed by ${child.signalCode}` : `exit code ${child.exitCode}`;
}

/** Rejects once workerd has exited and its output is all read ('close', after 'exit'). */
function exited(child: ChildProcess): Promise<never> {
  return new Promise((_resolve, reject) => {
    child.once('close', () => reject(new Error('workerd exited')));
    child.once('error', reject);
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await gone;
  clearTimeout(timer);
}

/**
 * Starts `workerd` (the binary at `binary`) serving the worker in `options.directory`; resolves
 * once it has answered a request: the worker sees a `GET /` before the caller's first request.
 * On failure the error carries workerd's output.
 */
export async function startWorkerd(binary: string, options: WorkerdOptions): Promise<WorkerdServer> {
  const modules = await modulesOf(options.directory);
  if (!modules.includes(options.main.split(sep).join('/'))) {
    throw new Error(`${options.main} is not a module file in ${options.directory}`);
  }
  const configDir = await mkdtemp(join(tmpdir(), 'mediahook-workerd-'));
  const configPath = join(configDir, 'worker.capnp');
  const base = relative(configDir, options.directory).split(sep).join('/');
  await writeFile(configPath, configOf(modules, base, options));

  const child = spawn(binary, ['serve', configPath, '--control-fd=3'], {
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-65536);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const stop = async () => {
    await stopChild(child);
    await rm(configDir, { recursive: true, force: true });
  };

  const timeoutMs = options.startTimeoutMs ?? 15_000;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`workerd did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  const died = exited(child);
  died.catch(() => {});
  try {
    const port = await Promise.race([listenPort(child.stdio[3] as Readable), died, timedOut]);
    const url = `http://127.0.0.1:${port}/`;
    await Promise.race([answers(url), died, timedOut]);
    return { url, output: () => output, stop };
  } catch (error) {
    // A worker that fails to load makes workerd close the pipe and exit: say how it exited.
    await Promise.race([died.catch(() => {}), sleep(1000)]);
    const how = child.exitCode !== null || child.signalCode !== null ? ` (${exitOf(child)})` : '';
    await stop();
    const reason = `${error instanceof Error ? error.message : String(error)}${how}`;
    throw new Error(`${reason}\n--- workerd output ---\n${output.trim()}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
}
