/**
 * The packed packages, installed into throw-away projects as users install them: what npm adds,
 * apps in plain JavaScript (ESM and CommonJS) receiving a callback that the installed
 * `npx mediahook send` sends, the service's commands with and without `@mediahook/server`, and
 * what each tarball carries.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, onTestFinished } from 'vitest';
import { jpegBytes, sha256 } from '../../packages/mediahook/test/receiver/helpers.ts';
import { installedProject, packedTarballs } from './packed.ts';

const exec = promisify(execFile);
const INSTALL = 10 * 60_000;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command in `cwd` and collects its output, whatever its exit code. */
async function runIn(cwd: string, command: string, args: string[]): Promise<Ran> {
  try {
    const { stdout, stderr } = await exec(command, args, { cwd, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string };
    return {
      code: typeof failed.code === 'number' ? failed.code : -1,
      stdout: failed.stdout ?? '',
      stderr: failed.stderr ?? '',
    };
  }
}

async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mediahook-install-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Bytes of every file under `dir`, counted as npm counts an unpacked size. */
async function sizeOf(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

/** Starts `node file` in `cwd` and resolves with the URL it prints on stderr when ready. */
async function startApp(cwd: string, file: string, out: string): Promise<{ url: string; app: ChildProcess }> {
  const app = spawn(process.execPath, [file], { cwd, env: { ...process.env, OUT: out } });
  onTestFinished(() => {
    app.kill();
  });
  let stderr = '';
  app.stderr.setEncoding('utf8');
  for await (const chunk of app.stderr) {
    stderr += chunk as string;
    const match = /listening on (http:\/\/\S+)/.exec(stderr);
    if (match) return { url: match[1]!, app };
  }
  throw new Error(`the app exited before listening: ${stderr}`);
}

const ESM_APP = `
import http from 'node:http';
import { createReceiver, nodeHandler } from 'mediahook';

const receiver = createReceiver({
  out: process.env.OUT,
  onSuccess: (callback) => console.log(JSON.stringify({ id: callback.id_gen, path: callback.file.path })),
});
const server = http.createServer(nodeHandler(receiver)).listen(0, '127.0.0.1', () => {
  console.error('listening on http://127.0.0.1:' + server.address().port + '/callbacks');
});
`;

const CJS_APP = `
const http = require('node:http');
const { createReceiver, nodeHandler } = require('mediahook');

const receiver = createReceiver({
  out: process.env.OUT,
  onSuccess: (callback) => console.log(JSON.stringify({ id: callback.id_gen, path: callback.file.path })),
});
const server = http.createServer(nodeHandler(receiver)).listen(0, '127.0.0.1', () => {
  console.error('listening on http://127.0.0.1:' + server.address().port + '/callbacks');
});
`;

describe('npm install mediahook', () => {
  it('adds exactly one package, with no install script, under 1 MiB', { timeout: INSTALL }, async () => {
    const project = await installedProject('receiver');
    const installed = (await readdir(join(project, 'node_modules'))).filter((name) => !name.startsWith('.'));
    expect(installed).toEqual(['mediahook']);
    const manifest = JSON.parse(
      await readFile(join(project, 'node_modules/mediahook/package.json'), 'utf8'),
    ) as {
      scripts?: Record<string, string>;
      dependencies?: Record<string, string>;
    };
    expect(manifest.dependencies ?? {}).toEqual({});
    for (const script of ['preinstall', 'install', 'postinstall', 'prepare']) {
      expect(manifest.scripts?.[script]).toBeUndefined();
    }
    expect(await sizeOf(join(project, 'node_modules/mediahook'))).toBeLessThan(1024 * 1024);
  });

  it.each([
    ['an ESM app', 'app.mjs', ESM_APP],
    ['a CommonJS app', 'app.cjs', CJS_APP],
  ])(
    '%s receives a callback sent by npx mediahook send',
    { timeout: INSTALL },
    async (_name, file, source) => {
      const project = await installedProject('receiver');
      const work = await scratch();
      await writeFile(join(project, file), source);
      const out = join(work, 'received');
      const { url, app } = await startApp(project, file, out);
      const jpeg = jpegBytes(4096);
      await writeFile(join(work, 'result.jpg'), jpeg);
      const sent = await runIn(project, 'npx', [
        'mediahook',
        'send',
        url,
        '--family',
        'A',
        '--file',
        join(work, 'result.jpg'),
        '--id',
        `install-${file}`,
      ]);
      expect(sent, sent.stderr).toMatchObject({ code: 0 });
      expect(sent.stdout).toContain('200');
      app.stdout!.setEncoding('utf8');
      const [line] = (await once(app.stdout!, 'data')) as [string];
      const told = JSON.parse(line) as { id: string; path: string };
      expect(told).toEqual({ id: `install-${file}`, path: join(out, `install-${file}.jpg`) });
      expect(sha256(await readFile(told.path))).toBe(sha256(jpeg));
    },
  );

  it('sends a built-in sample with npx mediahook send --sample', { timeout: INSTALL }, async () => {
    const project = await installedProject('receiver');
    const work = await scratch();
    await writeFile(join(project, 'app.mjs'), ESM_APP);
    const out = join(work, 'received');
    const { url, app } = await startApp(project, 'app.mjs', out);
    const args = ['mediahook', 'send', url, '--family', 'A', '--sample', 'mp4', '--id', 'install-sample'];
    const sent = await runIn(project, 'npx', args);
    expect(sent, sent.stderr).toMatchObject({ code: 0 });
    app.stdout!.setEncoding('utf8');
    const [line] = (await once(app.stdout!, 'data')) as [string];
    expect(JSON.parse(line)).toEqual({ id: 'install-sample', path: join(out, 'install-sample.mp4') });
  });

  it.each(['serve', 'worker', 'keys', 'demo', 'doctor'])(
    'mediahook %s says it needs @mediahook/server and exits 2, --help included',
    { timeout: INSTALL },
    async (command) => {
      const project = await installedProject('receiver');
      for (const args of [[command], [command, '--help'], [command, '--port', '0']]) {
        const ran = await runIn(project, 'npx', ['mediahook', ...args]);
        expect(ran.code).toBe(2);
        expect(ran.stderr).toContain('npm install @mediahook/server');
        expect(ran.stdout).toBe('');
      }
    },
  );

  it(
    'lists the service commands by name only, saying which package has them',
    { timeout: INSTALL },
    async () => {
      const project = await installedProject('receiver');
      const help = await runIn(project, 'npx', ['mediahook', '--help']);
      expect(help.code).toBe(0);
      for (const command of ['serve', 'worker', 'keys', 'demo', 'doctor']) {
        expect(help.stdout).toMatch(new RegExp(`^ {2}${command} +\\(needs @mediahook/server`, 'm'));
      }
    },
  );
});

describe('npm install mediahook @mediahook/server', () => {
  it('runs the service commands through mediahook and mediahook-server', { timeout: INSTALL }, async () => {
    const project = await installedProject('operator');
    const help = await runIn(project, 'npx', ['mediahook', 'serve', '--help']);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(/^Usage: mediahook serve/);
    // `mediahook --help` lists the service's commands as the installed server describes them.
    const described = (await import(
      join(project, 'node_modules/@mediahook/server/dist/cli/commands.js')
    )) as {
      serverCommands: { name: string; summary: string }[];
    };
    const listed = (await runIn(project, 'npx', ['mediahook', '--help'])).stdout;
    expect(described.serverCommands.map(({ name }) => name)).toEqual([
      'serve',
      'worker',
      'keys',
      'demo',
      'doctor',
    ]);
    for (const { name, summary } of described.serverCommands) {
      const line = listed.split('\n').find((text) => text.startsWith(`  ${name} `));
      expect(line?.trim(), name).toMatch(new RegExp(`^${name} +`));
      expect(line?.endsWith(`  ${summary}`), line).toBe(true);
    }
    const { version } = JSON.parse(
      await readFile(join(project, 'node_modules/@mediahook/server/package.json'), 'utf8'),
    ) as {
      version: string;
    };
    expect(await runIn(project, 'npx', ['mediahook-server', '--version'])).toMatchObject({
      code: 0,
      stdout: `${version}\n`,
    });
    // A key is stored in the service's SQLite database: the native module was built on install.
    const data = await scratch();
    const created = await runIn(project, 'npx', [
      'mediahook-server',
      'keys',
      'create',
      '--client',
      'ci',
      '--data',
      data,
    ]);
    expect(created, created.stderr).toMatchObject({ code: 0 });
    expect(created.stdout).toMatch(/mh_\S+/);
  });
});

describe('the tarballs', () => {
  it('carry README, LICENSE and CHANGELOG, compiled JavaScript and types, no sources or maps', async () => {
    const tarballs = await packedTarballs();
    for (const tarball of Object.values(tarballs)) {
      const { stdout } = await exec('tar', ['-tzf', tarball]);
      const files = stdout
        .trim()
        .split('\n')
        .map((line) => line.replace(/^package\//, ''));
      expect(files).toEqual(expect.arrayContaining(['README.md', 'LICENSE', 'CHANGELOG.md', 'package.json']));
      expect(files.filter((file) => file.endsWith('.map'))).toEqual([]);
      expect(files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toEqual([]);
      expect(files.some((file) => file.startsWith('dist/') && file.endsWith('.js'))).toBe(true);
    }
  });

  it('have READMEs whose relative links resolve inside the tarball', async () => {
    const tarballs = await packedTarballs();
    for (const tarball of Object.values(tarballs)) {
      const root = await unpacked(tarball);
      for (const doc of ['README.md', 'CHANGELOG.md', ...(await markdownUnder(join(root, 'docs'), 'docs'))]) {
        const text = await readFile(join(root, doc), 'utf8');
        for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)\s]*)?\)/g)) {
          if (/^[a-z]+:/i.test(target!)) continue;
          const path = join(root, doc, '..', target!);
          expect(path.startsWith(`${root}/`), `${doc} links ${target} outside the package`).toBe(true);
          await expect(
            stat(path).then(
              () => true,
              () => false,
            ),
            `${doc} links ${target}`,
          ).resolves.toBe(true);
        }
      }
    }
  });

  it('are written for package users: links, no Development section, released versions only', async () => {
    const tarballs = await packedTarballs();
    for (const tarball of Object.values(tarballs)) {
      const root = await unpacked(tarball);
      const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as Record<
        string,
        unknown
      >;
      expect(manifest).toMatchObject({
        repository: { type: 'git', url: 'git+https://github.com/mediahook/mediahook.git' },
        homepage: expect.stringMatching(/^https:\/\/github\.com\/mediahook\/mediahook\b/),
        bugs: { url: 'https://github.com/mediahook/mediahook/issues' },
      });
      const readme = await readFile(join(root, 'README.md'), 'utf8');
      expect(readme).not.toMatch(/^## Development/m);
      const changelog = await readFile(join(root, 'CHANGELOG.md'), 'utf8');
      expect(changelog.match(/^## (.+)$/m)?.[1], tarball).toBe(manifest['version']);
      expect(changelog).not.toMatch(/unreleased/i);
      // Contributor docs (source layout, lint, the repository's tests) stay in the repository.
      for (const doc of ['README.md', ...(await markdownUnder(join(root, 'docs'), 'docs'))]) {
        const text = (await readFile(join(root, doc), 'utf8')).replaceAll(/\(https:[^)\s]*\)/g, '');
        expect(text, doc).not.toMatch(/`src\/|npm run |`test\//);
      }
    }
  });
});

/** The files of a tarball, unpacked into a scratch directory: its `package/` folder. */
async function unpacked(tarball: string): Promise<string> {
  const dir = await scratch();
  await exec('tar', ['-xzf', tarball, '-C', dir]);
  return join(dir, 'package');
}

async function markdownUnder(dir: string, prefix: string): Promise<string[]> {
  const names = await readdir(dir, { recursive: true }).catch(() => [] as string[]);
  return names.filter((name) => name.endsWith('.md')).map((name) => join(prefix, name));
}
