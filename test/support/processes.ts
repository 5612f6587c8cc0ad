/**
 * Child processes of `bin/mediahook` for the reliability suites: started and awaited on their
 * ready line, killed hard or stopped gently, and always reaped, so no run leaves one behind.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export const BIN = fileURLToPath(new URL('../../bin/mediahook', import.meta.url));

export const POSTGRES_URL = process.env.MEDIAHOOK_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface Cli {
  child: ChildProcessWithoutNullStreams;
  /** What the ready pattern matched. */
  match: RegExpExecArray;
  /** Everything written to stderr so far (the last 64 KiB). */
  stderr(): string;
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  exited: Promise<number | string>;
}

const running = new Set<ChildProcessWithoutNullStreams>();

/** Starts `bin/mediahook args…` and waits until its stderr matches `ready`. */
export function startCli(
  args: string[],
  ready: RegExp,
  options: { timeoutMs?: number; onStdout?: (line: string) => void; command?: string } = {},
): Promise<Cli> {
  // `command` runs something else with these arguments (a shell that sets a limit, then execs us).
  const child = spawn(options.command ?? BIN, args, { stdio: 'pipe' });
  running.add(child);
  let stderr = '';
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve(code ?? signal ?? 'unknown');
    });
  });
  if (options.onStdout) {
    let pending = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      pending += text;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) options.onStdout!(line);
    });
  } else {
    child.stdout.resume();
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${args[0]} was not ready within ${options.timeoutMs ?? 30_000} ms: ${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr = (stderr + text).slice(-65536);
      const match = ready.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve({ child, match, stderr: () => stderr, exited });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${args[0]} exited (${code}) before it was ready: ${stderr}`));
    });
  });
}

/** SIGKILL: no handler runs, nothing is flushed or released. Resolves once the process is gone. */
export async function killHard(cli: Cli): Promise<void> {
  if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill('SIGKILL');
  await cli.exited;
}

/** SIGTERM, then SIGKILL after `graceMs` if it is still there. */
export async function stopGently(cli: Cli, graceMs = 15_000): Promise<number | string> {
  if (cli.child.exitCode !== null || cli.child.signalCode !== null) return cli.exited;
  cli.child.kill('SIGTERM');
  const timer = setTimeout(() => cli.child.kill('SIGKILL'), graceMs);
  const code = await cli.exited;
  clearTimeout(timer);
  return code;
}

/** Kills whatever this module started and is still running (a failed run's last resort). */
export function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
}

export async function tempDir(prefix: string): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), `mediahook-${prefix}-`));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** Undefined when PostgreSQL answers, else why not. */
export async function probePostgres(url = POSTGRES_URL): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

/** A fresh schema name and a function that drops it (with everything in it). */
export function freshSchema(prefix: string, url = POSTGRES_URL): { schema: string; drop(): Promise<void> } {
  const schema = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  return {
    schema,
    async drop() {
      // PostgreSQL may be restarting (the long crash run restarts it): try for a while.
      for (let attempt = 0; ; attempt++) {
        const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
        client.on('error', () => {});
        try {
          await client.connect();
          await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
          return;
        } catch (error) {
          if (attempt >= 20) throw error;
          await new Promise((resolve) => setTimeout(resolve, 500));
        } finally {
          await client.end().catch(() => {});
        }
      }
    },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` every `everyMs` until it is true; false when `timeoutMs` ran out first. */
export async function until(
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
  everyMs = 200,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
}
