/**
 * `mediahook listen --json` as a child process, with what the suites watch of it: its NDJSON
 * records, whether it is alive, its open descriptors and its peak memory (from /proc).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'undici';
import { BIN, type Cli, startCli, stopGently } from '../processes.ts';

/** What listen keeps beside the stored files: its receipts and the raw requests it keeps for replay. */
export const BOOKKEEPING: ReadonlySet<string> = new Set(['.mediahook', '.requests']);

export interface ListenRecord {
  event: 'success' | 'error' | 'rejected';
  code?: string;
  id_gen?: string;
  duplicate?: boolean;
  file?: { path: string | null };
}

export interface ListenProcess {
  cli: Cli;
  port: number;
  url: string;
  records: ListenRecord[];
  /** Answers `GET /` (the inspector) with 200. */
  alive(): Promise<boolean>;
  fds(): number;
  /** Peak resident memory so far, in MiB. */
  peakRssMb(): number;
  stop(): Promise<number | string>;
}

/**
 * Starts `listen` on a free port. `wrap` runs it under `bash -c` with that prefix (for example
 * `ulimit -f 2048`), so a limit applies to it alone.
 */
export async function startListen(
  out: string,
  options: { wrap?: string; args?: string[] } = {},
): Promise<ListenProcess> {
  const records: ListenRecord[] = [];
  const args = ['listen', '--port', '0', '--out', out, '--json', ...(options.args ?? [])];
  const onStdout = (line: string) => {
    if (line.trim()) records.push(JSON.parse(line) as ListenRecord);
  };
  const cli = options.wrap
    ? await startCli(['-c', `${options.wrap} && exec "$0" "$@"`, BIN, ...args], /receiving at (http:\S+)\//, {
        onStdout,
        command: 'bash',
      })
    : await startCli(args, /receiving at (http:\S+)\//, { onStdout });
  const url = cli.match[1]!;
  const pid = cli.child.pid!;
  return {
    cli,
    port: Number(new URL(url).port),
    url,
    records,
    async alive() {
      if (cli.child.exitCode !== null || cli.child.signalCode !== null) return false;
      try {
        const response = await request(`${url}/`, { headersTimeout: 10_000, bodyTimeout: 10_000 });
        await response.body.dump();
        return response.statusCode === 200;
      } catch {
        return false;
      }
    },
    fds: () => readdirSync(`/proc/${pid}/fd`).length,
    peakRssMb() {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
    },
    stop: () => stopGently(cli),
  };
}
