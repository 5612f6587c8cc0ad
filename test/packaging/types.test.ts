/**
 * A TypeScript project that installed the `mediahook` tarball type-checks its app with the
 * settings people have: `tsc --init`'s as generated, `module: nodenext`, `moduleResolution:
 * bundler`, and `strict: false`, each with `skipLibCheck: false`, so that mediahook's own
 * declarations are checked too. No framework's types are installed: the adapters need none.
 * Every subpath of both packages resolves to its own types under `moduleResolution` `node10`
 * (through `typesVersions`), `node16` and `bundler`.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../packages/mediahook/test/receiver/helpers.ts';
import { installedProject, ROOT } from './packed.ts';

const exec = promisify(execFile);
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

const APP = `
import { createServer } from 'node:http';
import {
  type Callback,
  createReceiver,
  memorySink,
  MemoryReceiptStore,
  nodeHandler,
  type ReceivedSuccess,
  webHandler,
} from 'mediahook';
import { decodeCallback, encodeCallback, signBody } from 'mediahook/protocol';
import { expressHandler } from 'mediahook/express';
import { fastifyReceiver } from 'mediahook/fastify';
import { honoHandler } from 'mediahook/hono';

const secret: string | undefined = process.env['WEBHOOK_SECRET'];
const idleTimeoutMs: number | undefined = process.env['IDLE'] ? Number(process.env['IDLE']) : undefined;
const receiver = createReceiver({
  out: './callbacks',
  secret,
  onSuccess: (callback: ReceivedSuccess) => console.log(callback.file.path),
  onError: (callback) => console.log(callback.message),
});
const handler = nodeHandler(receiver, { idleTimeoutMs });
createServer(handler).on('checkContinue', handler.checkContinue);
export const routes = [expressHandler(receiver), honoHandler(receiver), webHandler(receiver, { idleTimeoutMs })];
export const plugin = fastifyReceiver;
export const inMemory = createReceiver({ sink: memorySink(), store: new MemoryReceiptStore() });

export async function roundTrip(): Promise<string> {
  const encoded = await encodeCallback({
    family: 'A',
    event: 'error',
    status: 'failed',
    id_gen: 'op-1',
    time_gen: new Date().toISOString(),
    message: 'no result',
  });
  const decoded: Callback = await decodeCallback(encoded.body(), encoded.contentType, { family: undefined });
  return decoded.id_gen + signBody;
}
`;

/** Settings as `tsc --init` (TypeScript 5.9) writes them, but for skipLibCheck. */
const TSC_INIT = {
  module: 'nodenext',
  target: 'esnext',
  types: [],
  sourceMap: true,
  declaration: true,
  declarationMap: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  strict: true,
  jsx: 'react-jsx',
  verbatimModuleSyntax: true,
  isolatedModules: true,
  noUncheckedSideEffectImports: true,
  moduleDetection: 'force',
  skipLibCheck: false,
};

const SETTINGS: Record<string, Record<string, unknown>> = {
  'tsc --init': TSC_INIT,
  'module: nodenext': { module: 'nodenext', target: 'es2022', strict: true, skipLibCheck: false },
  'moduleResolution: bundler': {
    module: 'esnext',
    moduleResolution: 'bundler',
    target: 'es2022',
    lib: ['es2023'],
    types: ['node'],
    strict: true,
    skipLibCheck: false,
  },
  'strict: false': { module: 'nodenext', target: 'es2022', strict: false, skipLibCheck: false },
};

describe('a consumer type-checking an app against the installed mediahook', () => {
  it.each(Object.entries(SETTINGS))(
    'reports no error with %s',
    { timeout: 10 * 60_000 },
    async (_name, options) => {
      const installed = await installedProject('receiver');
      const dir = await tempDir();
      await mkdir(join(dir, 'node_modules/@types'), { recursive: true });
      await cp(join(installed, 'node_modules/mediahook'), join(dir, 'node_modules/mediahook'), {
        recursive: true,
      });
      // @types/node only, as every TypeScript project on Node has it: no framework's types.
      await symlink(join(ROOT, 'node_modules/@types/node'), join(dir, 'node_modules/@types/node'), 'dir');
      await symlink(join(ROOT, 'node_modules/undici-types'), join(dir, 'node_modules/undici-types'), 'dir');
      await writeFile(
        join(dir, 'package.json'),
        JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
      );
      await writeFile(join(dir, 'app.ts'), APP);
      await writeFile(
        join(dir, 'tsconfig.json'),
        JSON.stringify({ compilerOptions: { ...options, noEmit: true }, files: ['app.ts'] }, null, 2),
      );
      const checked = await tsc(dir, ['--listFilesOnly']);
      // The framework packages are not there, and nothing asked for them.
      expect(checked.output).not.toMatch(/node_modules\/(express|fastify|hono|@types\/express)\//);
      expect(checked.output).toContain('node_modules/mediahook/dist/index.d.ts');
      expect(await tsc(dir, [])).toEqual({ ok: true, output: '' });
    },
  );

  it('names no framework and no node:sqlite in any declaration it ships', async () => {
    const installed = await installedProject('receiver');
    const dist = join(installed, 'node_modules/mediahook/dist');
    const declarations = (await readdir(dist, { recursive: true })).filter((file) => file.endsWith('.d.ts'));
    expect(declarations.length).toBeGreaterThan(10);
    for (const file of declarations) {
      const text = await readFile(join(dist, file), 'utf8');
      expect(text, file).not.toMatch(
        /(?:from|import\(|types=)\s*['"](?:express|fastify|hono|@hono\/[^'"]*|node:sqlite)['"]/,
      );
    }
  });
});

/** Each subpath of a package, with the types file its `exports` names for it. */
async function subpathsOf(project: string, name: string): Promise<{ specifier: string; types: string }[]> {
  const manifest = JSON.parse(
    await readFile(join(project, 'node_modules', name, 'package.json'), 'utf8'),
  ) as {
    exports: Record<string, string | { types: string }>;
  };
  return Object.entries(manifest.exports).flatMap(([subpath, target]) =>
    typeof target === 'object'
      ? [
          {
            specifier: subpath === '.' ? name : `${name}/${subpath.slice(2)}`,
            types: join('node_modules', name, target.types),
          },
        ]
      : [],
  );
}

const RESOLUTIONS: Record<string, Record<string, unknown>> = {
  node10: { module: 'commonjs', moduleResolution: 'node10' },
  node16: { module: 'node16', moduleResolution: 'node16' },
  bundler: { module: 'esnext', moduleResolution: 'bundler' },
};

describe('a consumer importing every subpath of both installed packages', () => {
  it.each(Object.entries(RESOLUTIONS))(
    'resolves each to its types with moduleResolution %s',
    { timeout: 10 * 60_000 },
    async (resolution, options) => {
      const installed = await installedProject('operator');
      const entries = [
        ...(await subpathsOf(installed, 'mediahook')),
        ...(await subpathsOf(installed, '@mediahook/server')),
      ];
      const dir = await tempDir();
      await symlink(join(installed, 'node_modules'), join(dir, 'node_modules'), 'dir');
      await writeFile(
        join(dir, 'package.json'),
        JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
      );
      const app = entries.map(({ specifier }, i) => `import * as entry${i} from '${specifier}';`);
      app.push(`export const entries = [${entries.map((_, i) => `entry${i}`).join(', ')}];`);
      await writeFile(join(dir, 'app.ts'), `${app.join('\n')}\n`);
      const compilerOptions = { ...options, target: 'es2022', strict: true, types: ['node'], noEmit: true };
      await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['app.ts'] }));
      // Each specifier leads to the declaration file its package's `exports` names.
      const listed = (await tsc(dir, ['--listFilesOnly'])).output;
      for (const { specifier, types } of entries)
        expect(listed, `${resolution}: ${specifier}`).toContain(types);
      expect(await tsc(dir, []), resolution).toEqual({ ok: true, output: '' });
    },
  );
});

/** Runs the repository's tsc on the project in `dir`. */
async function tsc(dir: string, args: string[]): Promise<{ ok: boolean; output: string }> {
  return exec(process.execPath, [TSC, '-p', dir, ...args], { cwd: dir, maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout }) => ({ ok: true, output: stdout }),
    (error: { stdout?: string }) => ({ ok: false, output: error.stdout ?? String(error) }),
  );
}
