/**
 * The receiver from the packed `mediahook`, installed as users install it, on every runtime it
 * promises: Node 22 and 24 (nodeHandler, from ESM and from CommonJS), Bun and Deno (webHandler
 * with the default disk sink and receipts, large files hashed on a thread), and workerd
 * (webHandler with the in-memory sink, the receiver made at module scope as workers are
 * written). Each gets real callbacks over loopback: a small JPEG, a 3 MiB one (past the size
 * hashed in place), the same again (a duplicate), an error callback and a body that is not
 * multipart.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cp, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  expectFile,
  jpegBytes,
  post,
  send,
  sha256,
  tempDir,
  wire,
} from '../../packages/mediahook/test/receiver/helpers.ts';
import { installedProject } from '../packaging/packed.ts';
import { type RuntimeName, runtimeEnvironment, runtimeForTest } from './tools.ts';
import { COMPATIBILITY_DATE, startWorkerd } from './workerd.ts';

const SLOW = 10 * 60_000;

/** A scratch project whose node_modules is the installed one: the app sees mediahook as users do. */
async function appDir(): Promise<string> {
  const project = await installedProject('receiver');
  const dir = await tempDir();
  await symlink(join(project, 'node_modules'), join(dir, 'node_modules'), 'dir');
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  return dir;
}

/** What each app prints for an accepted callback, one JSON line on stdout. */
const REPORT = `(callback) => console.log(JSON.stringify({ id: callback.id_gen, event: callback.event, sha256: callback.file?.sha256 ?? null, path: callback.file?.path ?? null }))`;

const NODE_ESM = `
import http from 'node:http';
import { createReceiver, nodeHandler } from 'mediahook';
const report = ${REPORT};
const receiver = createReceiver({ out: process.argv[2], onSuccess: report, onError: report });
const server = http.createServer(nodeHandler(receiver)).listen(0, '127.0.0.1', () => {
  console.error('listening on http://127.0.0.1:' + server.address().port + '/callbacks');
});
`;

const NODE_CJS = NODE_ESM.replace(
  "import http from 'node:http';\nimport { createReceiver, nodeHandler } from 'mediahook';",
  "const http = require('node:http');\nconst { createReceiver, nodeHandler } = require('mediahook');",
);

const BUN = `
import { createReceiver, webHandler } from 'mediahook';
const report = ${REPORT};
const receiver = createReceiver({ out: process.argv[2], onSuccess: report, onError: report });
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: webHandler(receiver) });
console.error('listening on http://127.0.0.1:' + server.port + '/callbacks');
`;

const DENO = `
import { createReceiver, webHandler } from 'mediahook';
const report = ${REPORT};
const receiver = createReceiver({ out: Deno.args[0], onSuccess: report, onError: report });
Deno.serve(
  { hostname: '127.0.0.1', port: 0, onListen: ({ port }) => console.error('listening on http://127.0.0.1:' + port + '/callbacks') },
  webHandler(receiver),
);
`;

interface App {
  url: string;
  /** The JSON lines the app printed so far. */
  reports(): Record<string, unknown>[];
}

/** Starts a runtime on an app and waits for the URL it prints on stderr. */
async function startApp(binary: string, args: string[], name: RuntimeName, cwd: string): Promise<App> {
  const child: ChildProcess = spawn(binary, args, { cwd, env: runtimeEnvironment(name) });
  onTestFinished(() => {
    child.kill();
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr!.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (text: string) => {
      stderr += text;
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.on('exit', (code) => reject(new Error(`${name} exited (${code}) before listening:\n${stderr}`)));
  });
  return {
    url,
    reports: () =>
      stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

/** The callbacks every runtime gets, and what they must answer; returns the JPEGs sent. */
async function exercise(url: string) {
  const small = await wire({ family: 'A', event: 'success', file: jpegBytes(8 * 1024) });
  const large = await wire({ family: 'B', event: 'success', file: jpegBytes(3 * 1024 * 1024) });
  const error = await wire({ family: 'A', event: 'error', message: 'out of credits' });
  for (const callback of [small, large, error]) {
    expect(await send(url, callback)).toEqual({
      status: 200,
      body: { received: true, id_gen: callback.id, duplicate: false },
    });
  }
  expect((await send(url, large)).body).toMatchObject({ received: true, duplicate: true });
  const refused = await post(url, 'not a callback', { 'content-type': 'text/plain' });
  expect(refused).toMatchObject({ status: 500, body: { error: { code: 'not_multipart' } } });
  return { small, large, error };
}

/** Polls the app's reports until `count` arrived. */
async function reportsOf(app: App, count: number): Promise<Record<string, unknown>[]> {
  for (let i = 0; i < 200 && app.reports().length < count; i++) await new Promise((r) => setTimeout(r, 25));
  return app.reports();
}

async function expectStoredOnDisk(app: App, out: string, sent: Awaited<ReturnType<typeof exercise>>) {
  const reports = await reportsOf(app, 3);
  expect(reports).toEqual([
    {
      id: sent.small.id,
      event: 'success',
      sha256: sha256(sent.small.file!),
      path: join(out, `${sent.small.id}.jpg`),
    },
    {
      id: sent.large.id,
      event: 'success',
      sha256: sha256(sent.large.file!),
      path: join(out, `${sent.large.id}.jpg`),
    },
    { id: sent.error.id, event: 'error', sha256: null, path: null },
  ]);
  await expectFile(join(out, `${sent.small.id}.jpg`), sent.small.file);
  await expectFile(join(out, `${sent.large.id}.jpg`), sent.large.file);
}

describe('the installed receiver on other runtimes', () => {
  it.for([
    ['node22', 'app.mjs', NODE_ESM],
    ['node22', 'app.cjs', NODE_CJS],
    ['node24', 'app.mjs', NODE_ESM],
    ['node24', 'app.cjs', NODE_CJS],
  ] as const)('%s runs nodeHandler from %s', { timeout: SLOW }, async ([name, file, source], context) => {
    const binary = await runtimeForTest(name, context);
    const dir = await appDir();
    await writeFile(join(dir, file), source);
    const out = join(dir, 'received');
    const app = await startApp(binary, [file, out], name, dir);
    await expectStoredOnDisk(app, out, await exercise(app.url));
  });

  it('bun runs webHandler with the disk sink and receipts', { timeout: SLOW }, async (context) => {
    const binary = await runtimeForTest('bun', context);
    const dir = await appDir();
    await writeFile(join(dir, 'app.mjs'), BUN);
    const out = join(dir, 'received');
    const app = await startApp(binary, ['--no-install', 'app.mjs', out], 'bun', dir);
    await expectStoredOnDisk(app, out, await exercise(app.url));
  });

  it('deno runs webHandler with the disk sink and receipts', { timeout: SLOW }, async (context) => {
    const binary = await runtimeForTest('deno', context);
    const dir = await appDir();
    await writeFile(join(dir, 'app.mjs'), DENO);
    const out = join(dir, 'received');
    await mkdir(out);
    const project = await installedProject('receiver');
    const permissions = ['--allow-net=127.0.0.1', `--allow-read=${dir},${project}`, `--allow-write=${out}`];
    const app = await startApp(binary, ['run', ...permissions, 'app.mjs', out], 'deno', dir);
    await expectStoredOnDisk(app, out, await exercise(app.url));
  });

  // The newest date, and the oldest one the docs promise (node:fs and node:http from then on).
  it.for([COMPATIBILITY_DATE, '2025-09-15'])(
    'workerd at %s runs webHandler with the in-memory sink',
    { timeout: SLOW },
    async (compatibilityDate, context) => {
      const binary = await runtimeForTest('workerd', context);
      const project = await installedProject('receiver');
      const dir = await tempDir();
      await cp(join(project, 'node_modules/mediahook/dist'), join(dir, 'mediahook'), { recursive: true });
      await writeFile(join(dir, 'worker.js'), WORKER);
      const worker = await startWorkerd(binary, { directory: dir, main: 'worker.js', compatibilityDate });
      onTestFinished(() => worker.stop());
      const url = new URL('/callbacks', worker.url).href;
      const sent = await exercise(url);
      const kept = (await (await fetch(new URL('/kept', worker.url))).json()) as unknown[];
      expect(kept, worker.output()).toEqual([
        {
          id: sent.small.id,
          bytes: sent.small.file!.length,
          sha256: sha256(sent.small.file!),
          reported: sha256(sent.small.file!),
        },
        {
          id: sent.large.id,
          bytes: sent.large.file!.length,
          sha256: sha256(sent.large.file!),
          reported: sha256(sent.large.file!),
        },
      ]);
    },
  );
});

/** A worker as one is written: the receiver made when the module loads, files kept in memory. */
const WORKER = `
import { createReceiver, memorySink, MemoryReceiptStore, webHandler } from './mediahook/index.js';

const kept = [];
const hex = (buffer) => [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, '0')).join('');
const receiver = createReceiver({
  sink: memorySink(),
  store: new MemoryReceiptStore(),
  onSuccess: async (callback) => {
    const bytes = callback.file.sink.bytes;
    kept.push({ id: callback.id_gen, bytes: bytes.length, sha256: hex(await crypto.subtle.digest('SHA-256', bytes)), reported: callback.file.sha256 });
  },
});
const receive = webHandler(receiver);

export default {
  fetch(request) {
    if (new URL(request.url).pathname === '/kept') return Response.json(kept);
    return receive(request);
  },
};
`;
