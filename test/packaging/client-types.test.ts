/**
 * `@mediahook/server/client` type-checks in a project that has the packed server package and
 * nothing else: no dependency of the server, no @types/node, only the DOM's and ES's own
 * types, as a browser app has them, under `moduleResolution` `bundler` and `node16`.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../packages/mediahook/test/receiver/helpers.ts';
import { packedTarballs, ROOT } from './packed.ts';

const exec = promisify(execFile);
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

const APP = `
import {
  createClient,
  MediahookApiError,
  type Operation,
  type OperationList,
  type Stats,
} from '@mediahook/server/client';

const client = createClient({ baseUrl: 'http://127.0.0.1:8080', key: 'mh_key', fetch: globalThis.fetch });

export async function run(file: File, stream: ReadableStream<Uint8Array>): Promise<string> {
  const created: Operation = await client.operations.create(
    { kind: 'image', family: 'A', prompt: 'p', webhook_url: 'https://app.example/hook' },
    { idempotencyKey: 'order-1' },
  );
  const page: OperationList = await client.operations.list({ state: 'succeeded', limit: 10 });
  const stats: Stats = await client.stats('24h');
  await client.callbacks.submit({ webhook_url: 'https://app.example/hook', family: 'A', id_gen: 'x', file });
  await client.callbacks.submit({
    webhook_url: 'https://app.example/hook',
    family: 'B',
    id_gen: 'y',
    file: { stream, size: 10, type: 'image/jpeg' },
  });
  await client.callbacks.submit({ webhook_url: 'https://app.example/hook', family: 'B', id_gen: 'z', message: 'm' });
  const result: Response = await client.operations.result(created.id_gen);
  try {
    await client.endpoints.recover('127.0.0.1:9', new Date());
  } catch (error) {
    if (error instanceof MediahookApiError) return error.code + error.status;
  }
  return String(page.next_before) + stats.buckets.length + result.status;
}
`;

const SETTINGS: Record<string, Record<string, unknown>> = {
  'moduleResolution: bundler': { module: 'esnext', moduleResolution: 'bundler' },
  'moduleResolution: node16': { module: 'node16', moduleResolution: 'node16' },
};

describe('a browser project type-checking against @mediahook/server/client', () => {
  it.each(Object.entries(SETTINGS))(
    'reports no error with %s',
    { timeout: 5 * 60_000 },
    async (_name, options) => {
      const { server } = await packedTarballs();
      const dir = await tempDir();
      const installed = join(dir, 'node_modules/@mediahook/server');
      await mkdir(installed, { recursive: true });
      // The tarball alone, none of its dependencies: the client needs none.
      await exec('tar', ['-xzf', server, '-C', installed, '--strip-components=1']);
      await writeFile(
        join(dir, 'package.json'),
        JSON.stringify({ name: 'app', private: true, type: 'module' }),
      );
      await writeFile(join(dir, 'app.ts'), APP);
      const compilerOptions = {
        ...options,
        target: 'es2022',
        lib: ['es2022', 'dom', 'dom.iterable'],
        types: [],
        strict: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: false,
        noEmit: true,
      };
      await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['app.ts'] }));
      const result = await exec(process.execPath, [TSC, '-p', dir], { cwd: dir }).then(
        () => '',
        (error: { stdout?: string }) => error.stdout ?? String(error),
      );
      expect(result).toBe('');
    },
  );
});
