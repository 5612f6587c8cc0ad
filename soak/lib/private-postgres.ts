/**
 * A PostgreSQL server of the soak run's own, in a temporary directory on a free loopback port,
 * so the long crash run can restart it without pulling the shared server from under other
 * tests. Made with the installed server binaries (initdb, pg_ctl), run as the `postgres` user
 * when this process is root (PostgreSQL refuses to run as root).
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface PrivatePostgres {
  url: string;
  restart(): void;
  stop(): void;
}

function binaries(): string {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) throw new Error(`no PostgreSQL server binaries under ${root}`);
  const version = readdirSync(root)
    .sort((a, b) => Number(a) - Number(b))
    .at(-1)!;
  return join(root, version, 'bin');
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binaries();
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'mediahook-soak-pg-'));
  const uid = root ? Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()) : -1;
  const gid = root ? Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()) : -1;
  if (root) chownSync(dir, uid, gid);
  const run = (tool: string, args: string[]) =>
    root
      ? execFileSync('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args], { stdio: 'ignore' })
      : execFileSync(join(bin, tool), args, { stdio: 'ignore' });
  const data = join(dir, 'data');
  const port = await freePort();
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const ctl = (action: string) =>
    run('pg_ctl', [
      '-D',
      data,
      '-l',
      join(dir, 'server.log'),
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`,
      '-m',
      'fast',
      '-w',
      action,
    ]);
  ctl('start');
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: () => ctl('restart'),
    stop() {
      try {
        ctl('stop');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
