/**
 * The runtimes harness itself: each runtime installs (or is found in the tools folder), is the
 * pinned version, and runs a script; workerd serves a worker made of several modules. Off
 * linux-x64 every test is skipped with the reason, and outside CI so is a runtime that cannot
 * be installed (no registry at hand); in CI that fails.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { tempDir } from '../../packages/mediahook/test/receiver/helpers.ts';
import {
  RUNTIME_NAMES,
  RUNTIME_TOOLS,
  type RuntimeName,
  runtimeEnvironment,
  runtimeForTest,
} from './tools.ts';
import { startWorkerd } from './workerd.ts';

/** A cold install downloads up to 60 MB per runtime and unpacks up to 190 MB. */
const INSTALL_MS = 300_000;

function run(name: RuntimeName, binary: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(binary, args, { env: runtimeEnvironment(name), timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${name} ${args.join(' ')} failed: ${error.message}\n${stderr}`));
      else resolve(stdout.trim());
    });
  });
}

interface Script {
  args: string[];
  prints: string;
}

/**
 * A script for each runtime that prints the version it runs as, read from the runtime itself;
 * workerd runs no script from the command line, so it tells its version.
 */
const SCRIPTS: Record<RuntimeName, Script> = {
  node22: { args: ['-e', 'console.log(process.version)'], prints: `v${RUNTIME_TOOLS.node22.version}` },
  node24: { args: ['-e', 'console.log(process.version)'], prints: `v${RUNTIME_TOOLS.node24.version}` },
  bun: { args: ['--no-install', '-e', 'console.log(Bun.version)'], prints: RUNTIME_TOOLS.bun.version },
  deno: { args: ['eval', 'console.log(Deno.version.deno)'], prints: RUNTIME_TOOLS.deno.version },
  workerd: { args: ['--version'], prints: RUNTIME_TOOLS.workerd.reports },
};

describe('runtimes harness', () => {
  for (const name of RUNTIME_NAMES) {
    const script = SCRIPTS[name];
    it(`${name} installs and runs`, { timeout: INSTALL_MS }, async (context) => {
      const binary = await runtimeForTest(name, context);
      expect(await run(name, binary, script.args)).toBe(script.prints);
    });
  }

  it(
    'workerd serves a worker of several modules, with Node built-ins',
    { timeout: INSTALL_MS },
    async (context) => {
      const binary = await runtimeForTest('workerd', context);
      const directory = await tempDir();
      await mkdir(join(directory, 'lib'));
      await writeFile(
        join(directory, 'lib', 'digest.js'),
        `import { createHash } from 'node:crypto';
export const digest = (text) => createHash('sha256').update(text).digest('hex');
`,
      );
      await writeFile(
        join(directory, 'worker.js'),
        `import { digest } from './lib/digest.js';
export default {
  async fetch(request) {
    const body = request.method === 'POST' ? await request.text() : '';
    return new Response(digest(body));
  },
};
`,
      );
      const server = await startWorkerd(binary, { directory, main: 'worker.js' });
      onTestFinished(() => server.stop());
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      const response = await fetch(server.url, { method: 'POST', body: 'abc' });
      expect(await response.text()).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    },
  );

  it(
    'workerd that cannot load its worker fails with what it said',
    { timeout: INSTALL_MS },
    async (context) => {
      const binary = await runtimeForTest('workerd', context);
      const directory = await tempDir();
      await writeFile(
        join(directory, 'worker.js'),
        `import './missing.js';\nexport default { fetch: () => new Response('') };\n`,
      );
      await expect(startWorkerd(binary, { directory, main: 'worker.js' })).rejects.toThrow(
        /No such module "missing\.js"/,
      );
    },
  );
});
