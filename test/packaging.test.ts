/**
 * mediahook ships TypeScript sources, so a consumer's tsc checks them under the consumer's own
 * settings. A consumer project with a strict tsconfig, mediahook linked into its node_modules,
 * must type-check without Fastify, Express or Hono types and without any @types of its own
 * but @types/node.
 */
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../packages/mediahook/test/receiver/helpers.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const CONSUMER_TSCONFIG = {
  compilerOptions: {
    target: 'ES2023',
    lib: ['ES2024'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    noImplicitReturns: true,
    noFallthroughCasesInSwitch: true,
    verbatimModuleSyntax: true,
    isolatedModules: true,
    allowImportingTsExtensions: true,
    noEmit: true,
    skipLibCheck: true,
    // @types/node only, taken from mediahook's install: the consumer has none of its own.
    typeRoots: [join(ROOT, 'node_modules', '@types')],
    types: ['node'],
  },
  files: ['consumer.ts'],
};

/** Every entry a receiving app is likely to use, with option values that may be undefined. */
const CONSUMER_SOURCE = `
import { createServer } from 'node:http';
import {
  type Callback,
  createReceiver,
  decodeCallback,
  encodeCallback,
  expressHandler,
  fastifyReceiver,
  honoHandler,
  nodeHandler,
  webHandler,
} from 'mediahook';

const secret: string | undefined = process.env.WEBHOOK_SECRET;
const idleTimeoutMs: number | undefined = process.env.IDLE ? Number(process.env.IDLE) : undefined;
const receiver = createReceiver({ out: './callbacks', secret, onSuccess: (callback) => callback.file.path });
const handler = nodeHandler(receiver, { idleTimeoutMs });
createServer(handler).on('checkContinue', handler.checkContinue);
export const routes = [expressHandler(receiver), honoHandler(receiver), webHandler(receiver, { idleTimeoutMs })];
export const plugin = fastifyReceiver;

const encoded = await encodeCallback({
  family: 'A',
  event: 'error',
  status: 'failed',
  id_gen: 'op-1',
  time_gen: new Date().toISOString(),
  message: 'no result',
});
const decoded: Callback = await decodeCallback(encoded.body(), encoded.contentType, { family: undefined });
export const idGen: string = decoded.id_gen;
`;

/** The tsc diagnostics of the consumer project, and the files its program took in. */
async function checkConsumer(): Promise<{ diagnostics: string; files: string[] }> {
  const dir = await tempDir();
  await mkdir(join(dir, 'node_modules'));
  await symlink(ROOT, join(dir, 'node_modules', 'mediahook'), 'dir');
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'consumer', type: 'module', private: true }),
  );
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify(CONSUMER_TSCONFIG, null, 2));
  await writeFile(join(dir, 'consumer.ts'), CONSUMER_SOURCE);
  const configPath = join(dir, 'tsconfig.json');
  const { config } = ts.readConfigFile(configPath, ts.sys.readFile) as { config: unknown };
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, dir, undefined, configPath);
  expect(parsed.errors).toEqual([]);
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
  const diagnostics = ts.formatDiagnostics(ts.getPreEmitDiagnostics(program), {
    getCanonicalFileName: (name) => name,
    getCurrentDirectory: () => dir,
    getNewLine: () => '\n',
  });
  return { diagnostics, files: program.getSourceFiles().map((file) => file.fileName) };
}

/** Checked once for the tests that look at it (a check takes seconds). */
let consumer: ReturnType<typeof checkConsumer> | undefined;
const checkedConsumer = () => (consumer ??= checkConsumer());

describe('a consumer type-checking mediahook', () => {
  it('passes strict settings, exactOptionalPropertyTypes included, without framework types', async () => {
    const { diagnostics, files } = await checkedConsumer();
    expect(diagnostics).toBe('');
    // The sources were checked, not skipped: they are where the strict settings bite.
    expect(files).toContain(join(ROOT, 'src', 'receiver', 'adapters', 'fastify.ts').split(sep).join('/'));
    // Fastify is installed here for the tests, so an import of it would still resolve: whether
    // the program took in any framework's types is what says a consumer needs none.
    const frameworks = files.filter((file) =>
      /\/node_modules\/(?:fastify|express|hono|@types\/express)\//.test(file),
    );
    expect(frameworks).toEqual([]);
  }, 60_000);

  it('has no import of fastify in the Fastify adapter', async () => {
    const source = await readFile(join(ROOT, 'src', 'receiver', 'adapters', 'fastify.ts'), 'utf8');
    expect(source).not.toMatch(/(?:from|import)\s*\(?\s*['"]fastify['"]/);
  });

  it('needs only type packages that are dependencies, @types/node aside', async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const { files } = await checkedConsumer();
    const typePackages = new Set(
      files.flatMap((file) => /\/node_modules\/(@types\/[^/]+)\//.exec(file)?.[1] ?? []),
    );
    typePackages.delete('@types/node');
    for (const name of typePackages) expect(pkg.dependencies).toHaveProperty([name]);
    expect([...typePackages].sort()).toEqual(['@types/better-sqlite3', '@types/pg']);
  }, 60_000);
});
