/**
 * The service installed with install scripts off, as pnpm does by default: better-sqlite3 has
 * no native module. Simulated in a copy of the packed install (the module renamed there, never
 * in the original): `serve`, `keys` and `doctor` say what to do in one line, and `demo` exits
 * at once instead of hanging, holding no port.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { cp, mkdir, mkdtemp, readdir, rename, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { closedPort, runToExit } from '../../packages/mediahook/test/cli/helpers.ts';
import { installedProject } from './packed.ts';

const exec = promisify(execFile);
const INSTALL = 10 * 60_000;
/** The limit the start-up checks keep: a command that cannot start says so within it. */
const START_LIMIT_MS = 15_000;

/**
 * A project like `source` whose better-sqlite3 lost its native module: the packages that load
 * it are copied (so that they resolve the copy), every other one is linked to the original.
 */
async function withoutBinding(source: string, into: string): Promise<void> {
  const modules = join(into, 'node_modules');
  await mkdir(modules, { recursive: true });
  await cp(join(source, 'package.json'), join(into, 'package.json'));
  const copied = new Set(['better-sqlite3', 'mediahook', '@mediahook', '.bin']);
  for (const name of await readdir(join(source, 'node_modules'))) {
    const from = join(source, 'node_modules', name);
    if (copied.has(name)) await cp(from, join(modules, name), { recursive: true, verbatimSymlinks: true });
    else await symlink(from, join(modules, name));
  }
  const { stdout } = await exec('find', [join(modules, 'better-sqlite3'), '-name', '*.node']);
  const found = stdout.trim().split('\n').filter(Boolean);
  expect(found.length).toBeGreaterThan(0);
  for (const file of found) await rename(file, `${file}.gone`);
}

function mediahook(cwd: string, args: string[]) {
  return runToExit(join(cwd, 'node_modules/.bin/mediahook'), args, { cwd, limitMs: START_LIMIT_MS });
}

/** Listens on `port` and lets it go: throws when something holds it. */
async function portIsFree(port: number): Promise<true> {
  const server = createServer().listen(port, '127.0.0.1');
  await once(server, 'listening');
  server.close();
  await once(server, 'close');
  return true;
}

const LINE =
  /^mediahook: cannot start: the SQLite driver is not usable: better-sqlite3's native module cannot be loaded \(.+\) \(its install script did not run: npm rebuild better-sqlite3, or use --db postgres:\/\/…\)\n$/;

let project: string;

beforeAll(async () => {
  const installed = await installedProject('operator');
  project = await mkdtemp(join(tmpdir(), 'mediahook-no-binding-'));
  await withoutBinding(installed, project);
  return () => rm(project, { recursive: true, force: true });
}, INSTALL);

describe('@mediahook/server without better-sqlite3 native module', () => {
  it.each([
    ['serve', '--port', '0', '--data', 'serve-data'],
    ['keys', 'create', '--client', 'ops', '--data', 'keys-data'],
    ['worker', '--db', 'worker.sqlite'],
  ])('%s exits 1 with one line naming npm rebuild and --db postgres://', async (...args) => {
    const ran = await mediahook(project, args);
    expect([ran.code, ran.stderr]).toEqual([1, expect.stringMatching(LINE)]);
  });

  it('doctor marks the database row with the same advice', async () => {
    const ran = await mediahook(project, ['doctor', '--data', 'doctor-data']);
    expect(ran.code).toBe(1);
    expect(ran.stdout).toMatch(
      /^FAIL {2}database {3}the SQLite driver is not usable: .*npm rebuild better-sqlite3/m,
    );
    expect(ran.stdout).toMatch(/^ok {4}blobs /m);
  });

  it('demo exits at once and holds neither of its ports', async () => {
    const [apiPort, receiverPort] = [await closedPort(), await closedPort()];
    const ran = await mediahook(project, [
      'demo',
      '--port',
      String(apiPort),
      '--receiver-port',
      String(receiverPort),
      '--data',
      'demo-data',
    ]);
    expect([ran.code, ran.stderr]).toEqual([1, expect.stringMatching(LINE)]);
    expect(await portIsFree(apiPort)).toBe(true);
    expect(await portIsFree(receiverPort)).toBe(true);
  });
});
