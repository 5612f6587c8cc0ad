/**
 * The tarballs as the package linters see them: @arethetypeswrong/cli over every resolution,
 * node10 included (a CommonJS caller resolving to ESM is expected: `require()` of it works on
 * Node 20.19+, as install.test.ts shows) and publint in strict mode.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { packedTarballs, type PackageName, ROOT } from './packed.ts';

const exec = promisify(execFile);
const bin = (name: string) => join(ROOT, 'node_modules/.bin', name);

describe.each(['mediahook', 'server'] satisfies PackageName[])('the %s tarball', (name) => {
  it('passes @arethetypeswrong/cli', { timeout: 120_000 }, async () => {
    const tarball = (await packedTarballs())[name];
    const args = [tarball, '--ignore-rules', 'cjs-resolves-to-esm', '--format', 'json'];
    const { stdout } = await exec(bin('attw'), args).catch((error: { stdout: string }) => error);
    const { analysis } = JSON.parse(stdout) as {
      analysis: { problems: { kind: string; resolutionKind?: string }[] };
    };
    const problems = analysis.problems.filter((problem) => problem.kind !== 'CJSResolvesToESM');
    expect(problems).toEqual([]);
  });

  it('passes publint --strict', { timeout: 120_000 }, async () => {
    const tarball = (await packedTarballs())[name];
    const { stdout } = await exec(bin('publint'), ['run', tarball, '--strict']);
    expect(stdout).toContain('All good!');
  });
});
