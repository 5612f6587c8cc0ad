/**
 * The `package` suite: what a user of the packed `mediahook` pays before anything happens. The
 * start of `mediahook --version` against bare Node's (`node -e 0`), the time `import('mediahook')`
 * and `require('mediahook')` take in a fresh process, and the installed size, all on the tarball
 * installed into a throw-away project (test/packaging/packed.ts).
 */
import { execFile } from 'node:child_process';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { installedProject } from '../test/packaging/packed.ts';
import { type Check, interleave, median, type Suite, type SuiteResult } from './harness.ts';

const exec = promisify(execFile);

const CONTENDERS = ['ours', 'node -e 0'] as const;
type Contender = (typeof CONTENDERS)[number];

/** Wall time of one process from spawn to exit, in milliseconds. */
async function processMs(file: string, args: string[], cwd: string): Promise<number> {
  const started = performance.now();
  await exec(file, args, { cwd });
  return performance.now() - started;
}

/** What a fresh process reports its own import of the package took, in milliseconds. */
async function loadMs(cwd: string, how: 'import' | 'require'): Promise<number> {
  const code =
    how === 'import'
      ? "const t = performance.now(); await import('mediahook'); console.log(performance.now() - t);"
      : "const t = performance.now(); require('mediahook'); console.log(performance.now() - t);";
  const args = how === 'import' ? ['--input-type=module', '-e', code] : ['-e', code];
  const { stdout } = await exec(process.execPath, args, { cwd });
  return Number(stdout.trim());
}

async function installedBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

export const suite: Suite = {
  name: 'package',
  description: 'the installed mediahook tarball: command start-up, import time, installed size',
  async run({ quick, log }): Promise<SuiteResult> {
    log('packing and installing the tarball into a throw-away project');
    const project = await installedProject('receiver');
    const bin = join(project, 'node_modules/.bin/mediahook');
    const rounds = quick ? 10 : 30;
    log(`mediahook --version against node -e 0: ${rounds} runs each`);
    const startRuns = await interleave<Contender>(CONTENDERS, rounds, 2, (contender) =>
      contender === 'ours'
        ? processMs(bin, ['--version'], project)
        : processMs(process.execPath, ['-e', '0'], project),
    );
    log(`import('mediahook') and require('mediahook') in fresh processes: ${rounds} runs each`);
    const imports: number[] = [];
    const requires: number[] = [];
    for (let i = 0; i < rounds; i++) {
      imports.push(await loadMs(project, 'import'));
      requires.push(await loadMs(project, 'require'));
    }
    const size = await installedBytes(join(project, 'node_modules/mediahook'));
    const version = {
      ours: median(startRuns.ours),
      bare: median(startRuns['node -e 0']),
    };
    const importMs = median(imports);
    const checks: Check[] = [
      {
        label: 'mediahook --version ≤ 2× node -e 0',
        value: version.ours && version.bare ? `${(version.ours / version.bare).toFixed(2)}×` : '—',
        pass: version.ours && version.bare ? version.ours <= 2 * version.bare : null,
      },
      {
        label: "import('mediahook') ≤ 50 ms",
        value: `${importMs?.toFixed(1)} ms`,
        pass: importMs === null ? null : importMs <= 50,
      },
      { label: 'installed size < 1 MiB', value: `${(size / 1024).toFixed(0)} KiB`, pass: size < 1024 * 1024 },
    ];
    const row = (id: string, label: string, unit: string, ours: number[], peer: number[] = []) => ({
      id,
      label,
      unit,
      better: 'lower' as const,
      ours: median(ours),
      peers: { 'node -e 0': peer.length ? median(peer) : null },
      runs: { ours, 'node -e 0': peer },
    });
    return {
      contenders: [...CONTENDERS],
      measures: [
        row(
          'start.version',
          'mediahook --version, spawn to exit',
          'ms',
          startRuns.ours,
          startRuns['node -e 0'],
        ),
        row('load.import', "import('mediahook') in a fresh process", 'ms', imports),
        row('load.require', "require('mediahook') in a fresh process", 'ms', requires),
        row('size.installed', 'node_modules/mediahook on disk (file lengths)', 'KiB', [size / 1024]),
      ],
      checks,
      notes: ['node -e 0 is bare Node starting and exiting: the floor of any command written for Node.'],
    };
  },
};
