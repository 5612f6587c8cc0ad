/**
 * `serve --generator-command` with the limits set on the command line: a result past
 * `--generator-max-output` fails its operation with the limit named, and the flags are wrong
 * usage without a command or with a bad value.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { OperationResource } from '../../../src/store/index.ts';
import { runCli } from '../../../../mediahook/test/cli/helpers.ts';
import { type ServeProcess, startServeProcess } from '../service-harness.ts';

const FAKE_MODEL = fileURLToPath(new URL('fixtures/fake-model.mjs', import.meta.url));

const dirs: string[] = [];
const serves: ServeProcess[] = [];
afterEach(async () => {
  for (const serve of serves.splice(0)) serve.child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mediahook-generator-flags-'));
  dirs.push(dir);
  return dir;
}

async function finished(url: string, id: string): Promise<OperationResource> {
  for (;;) {
    const response = await request(new URL(`/v1/operations/${id}`, url));
    const operation = (await response.body.json()) as OperationResource;
    if (operation.state === 'succeeded' || operation.state === 'failed') return operation;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('serve --generator-command limits', () => {
  it('fails an operation whose result is past --generator-max-output, naming the limit', async () => {
    const command = `${process.execPath} ${FAKE_MODEL} big`; // writes a 2 MiB JPEG
    const serve = await startServeProcess([
      '--data',
      await dataDir(),
      '--allow-private-urls',
      '--generator-command',
      command,
      '--generator-max-output',
      '1MiB',
      '--generator-timeout',
      '30s',
    ]);
    serves.push(serve);
    const created = await request(new URL('/v1/operations', serve.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'image', family: 'A', prompt: 'p', webhook_url: 'http://127.0.0.1:9/x' }),
    });
    expect(created.statusCode).toBe(202);
    const { id_gen } = (await created.body.json()) as { id_gen: string };
    const operation = await finished(serve.url, id_gen);
    expect(operation.state).toBe('failed');
    const stored = await request(new URL(`/v1/operations/${id_gen}/result`, serve.url));
    await stored.body.dump();
    expect(stored.statusCode).toBe(404);
    expect(serve.stdout()).toMatch(/larger than 1 MiB, the limit/);
  });

  it('refuses the limits without a command, and values that are not a duration or a size', async () => {
    const data = await dataDir();
    const alone = await runCli(['serve', '--data', data, '--generator-timeout', '1m']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('go with --generator-command');
    const size = await runCli([
      'serve',
      '--data',
      data,
      '--generator-command',
      'x',
      '--generator-max-output',
      'lots',
    ]);
    expect(size.code).toBe(2);
    expect(size.stderr).toContain('--generator-max-output: "lots" is not a size');
    const time = await runCli([
      'serve',
      '--data',
      data,
      '--generator-command',
      'x',
      '--generator-timeout',
      'soon',
    ]);
    expect(time.code).toBe(2);
    expect(time.stderr).toContain('--generator-timeout:');
  });
});
