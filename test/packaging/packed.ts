/**
 * The two packages as npm publishes them, and throw-away projects that install them from the
 * tarballs as a user would. Packing and installing are shared by every test file of a run (the
 * first to ask does the work under a lock, the others wait) and kept for later runs, keyed by
 * the hash of what goes into the tarballs: built packages that did not change are not packed
 * or installed again (under the system's temporary directory).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PACKAGES = { mediahook: 'packages/mediahook', server: 'packages/server' } as const;
export type PackageName = keyof typeof PACKAGES;

/** How long a lock may be held before another process takes it over (a killed run's). */
const STALE_LOCK_MS = 15 * 60 * 1000;

/** Every file under `dir`, relative to it, sorted; a missing directory has none. */
async function filesUnder(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return [];
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

/**
 * The hash of what the tarballs are made from: built files, manifests, docs, and the
 * repository's README and LICENSE, and the script that makes the packed copies of them.
 */
async function contentKey(): Promise<string> {
  const hash = createHash('sha256');
  const add = async (path: string) => {
    hash.update(`${relative(ROOT, path)}\0`);
    hash.update(await readFile(path));
  };
  await add(join(ROOT, 'LICENSE'));
  await add(join(ROOT, 'README.md'));
  await add(join(ROOT, 'scripts/pack-files.js'));
  for (const [name, path] of Object.entries(PACKAGES)) {
    const dir = join(ROOT, path);
    const own = ['package.json', 'CHANGELOG.md', ...(name === 'mediahook' ? [] : ['README.md'])];
    for (const file of own) await add(join(dir, file));
    for (const sub of ['dist', 'docs', 'samples']) {
      for (const file of await filesUnder(join(dir, sub))) await add(join(dir, sub, file));
    }
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * Runs `work` once for `dir` across processes: the first caller does it while holding
 * `dir.lock`, writes `dir/done`, and every later caller only waits for that.
 */
async function once(dir: string, work: () => Promise<void>): Promise<void> {
  const done = join(dir, 'done');
  const lock = `${dir}.lock`;
  await mkdir(dirname(dir), { recursive: true });
  for (;;) {
    if (existsSync(done)) return;
    try {
      await mkdir(lock, { recursive: false });
    } catch {
      const held = await stat(lock).catch(() => null);
      if (held && Date.now() - held.mtimeMs > STALE_LOCK_MS) await rm(lock, { recursive: true, force: true });
      await sleep(250);
      continue;
    }
    try {
      if (existsSync(done)) return;
      await rm(dir, { recursive: true, force: true });
      await mkdir(dir, { recursive: true });
      await work();
      await writeFile(done, '');
      return;
    } finally {
      await rm(lock, { recursive: true, force: true });
    }
  }
}

let keyed: Promise<string> | undefined;

/**
 * This build's directory, where its tarballs and projects go: outside the repository, so that
 * nothing in the projects resolves to the repository's own node_modules.
 */
function buildDir(): Promise<string> {
  keyed ??= contentKey().then(async (key) => {
    const parent = join(tmpdir(), 'mediahook-packaging');
    await pruneOlderBuilds(parent, key);
    return join(parent, key);
  });
  return keyed;
}

/** Builds not used for a day are removed: an operator's project alone is over 100 MB. */
async function pruneOlderBuilds(parent: string, keep: string): Promise<void> {
  const names = await readdir(parent).catch(() => [] as string[]);
  for (const name of names) {
    if (name.startsWith(keep)) continue;
    const info = await stat(join(parent, name)).catch(() => null);
    if (info && Date.now() - info.mtimeMs > 24 * 60 * 60 * 1000) {
      await rm(join(parent, name), { recursive: true, force: true });
    }
  }
}

type Tarballs = Record<PackageName, string>;

/**
 * Both packages packed as `npm publish` would: the package's own `prepack` adds the README and
 * LICENSE, the build having run before the tests (`npm test` builds first).
 */
export async function packedTarballs(): Promise<Tarballs> {
  const dir = join(await buildDir(), 'tarballs');
  await once(dir, async () => {
    const packFiles = (args: string[]) =>
      Promise.all(
        Object.values(PACKAGES).map((path) =>
          run('node', [join(ROOT, 'scripts/pack-files.js'), ...args], { cwd: join(ROOT, path) }),
        ),
      );
    try {
      await packFiles([]);
      await run('npm', ['pack', '--workspaces', '--ignore-scripts', '--pack-destination', dir], {
        cwd: ROOT,
      });
    } finally {
      await packFiles(['--restore']);
    }
  });
  const names = await readdir(dir);
  const find = (prefix: string) => {
    const name = names.find((file) => file.startsWith(prefix) && file.endsWith('.tgz'));
    if (!name) throw new Error(`no ${prefix}*.tgz in ${dir}`);
    return join(dir, name);
  };
  return { mediahook: find('mediahook-0'), server: find('mediahook-server-') };
}

/** A throw-away project: `mediahook` alone (a receiving app), or both packages (an operator). */
type ProjectKind = 'receiver' | 'operator';

const CONTENTS: Record<ProjectKind, readonly PackageName[]> = {
  receiver: ['mediahook'],
  operator: ['mediahook', 'server'],
};

/**
 * The directory of a throw-away ESM project (`"type": "module"`) that installed the tarballs
 * with npm, install scripts and all, from the registry's packages for the server's
 * dependencies (npm's cache first).
 */
export async function installedProject(kind: ProjectKind): Promise<string> {
  const tarballs = await packedTarballs();
  const dir = join(await buildDir(), `project-${kind}`);
  await once(dir, async () => {
    await writeFile(
      join(dir, 'package.json'),
      JSON.stringify({ name: `throwaway-${kind}`, private: true, type: 'module' }, null, 2),
    );
    const specs = CONTENTS[kind].map((name) => tarballs[name]);
    await run('npm', ['install', ...specs, '--no-audit', '--no-fund', '--prefer-offline'], {
      cwd: dir,
      maxBuffer: 16 * 1024 * 1024,
    });
  });
  return dir;
}
