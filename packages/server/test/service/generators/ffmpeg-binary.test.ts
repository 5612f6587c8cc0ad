/** Which ffmpeg runs (explicit setting, then PATH, then the installer package) and how its failures read. */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FFMPEG_PATH_ENV,
  ffmpegBinary,
  findFfmpegBinary,
  runFfmpeg,
} from '../../../src/service/generators/index.ts';
import { temporaryDirectory } from './media-probe.ts';

let dir: { path: string; remove: () => Promise<void> };

/** A directory holding an `ffmpeg` script that exits with the given code. */
async function fakeFfmpegDir(name: string, exitCode: number): Promise<string> {
  const bin = join(dir.path, name);
  await mkdir(bin);
  await writeFile(join(bin, 'ffmpeg'), `#!/bin/sh\necho "ffmpeg version fake"\nexit ${exitCode}\n`);
  await chmod(join(bin, 'ffmpeg'), 0o755);
  return bin;
}

beforeAll(async () => {
  dir = await temporaryDirectory();
});
afterAll(async () => {
  await dir.remove();
});

describe.skipIf(process.platform === 'win32')('findFfmpegBinary', () => {
  it('takes ffmpeg from PATH when it runs', async () => {
    const bin = await fakeFfmpegDir('working', 0);
    await expect(findFfmpegBinary({ PATH: bin })).resolves.toEqual({ path: 'ffmpeg', source: 'path' });
  });

  it('falls back to the installer package when PATH has none, or a broken one', async () => {
    const broken = await fakeFfmpegDir('broken', 1);
    for (const PATH of [join(dir.path, 'nowhere'), broken]) {
      const found = await findFfmpegBinary({ PATH });
      expect(found.source).toBe('installer');
      expect(found.path).toMatch(/@ffmpeg-installer/);
    }
  });

  it(`prefers ${FFMPEG_PATH_ENV}, and refuses a wrong one instead of guessing`, async () => {
    const bin = await fakeFfmpegDir('explicit', 0);
    await expect(findFfmpegBinary({ [FFMPEG_PATH_ENV]: join(bin, 'ffmpeg'), PATH: '' })).resolves.toEqual({
      path: join(bin, 'ffmpeg'),
      source: 'env',
    });
    await expect(findFfmpegBinary({ [FFMPEG_PATH_ENV]: '/nonexistent/ffmpeg' })).rejects.toMatchObject({
      name: 'GenerationError',
      code: 'generator_unavailable',
    });
  });

  it('remembers the binary of the process', async () => {
    const first = ffmpegBinary();
    expect(ffmpegBinary()).toBe(first);
    expect((await first).path).toBeTruthy();
  });
});

describe('runFfmpeg', () => {
  it('fails with the last lines of ffmpeg’s stderr', async () => {
    const failure = runFfmpeg({
      args: ['-v', 'error', '-i', join(dir.path, 'missing.mp4'), '-f', 'null', '-'],
      timeoutMs: 10_000,
    });
    await expect(failure).rejects.toMatchObject({ code: 'generation_failed' });
    await expect(failure).rejects.toThrow(
      /^ffmpeg failed \(exit code 1\): .*missing\.mp4: No such file or directory/,
    );
  });

  it('kills ffmpeg after the time limit', async () => {
    const endless = ['-v', 'error', '-re', '-f', 'lavfi', '-i', 'testsrc=size=64x64', '-f', 'null', '-'];
    const started = performance.now();
    await expect(runFfmpeg({ args: endless, timeoutMs: 400 })).rejects.toMatchObject({
      code: 'generator_timeout',
      message: 'ffmpeg did not finish within 400 ms',
    });
    expect(performance.now() - started).toBeLessThan(4000);
  });

  it('kills ffmpeg when aborted', async () => {
    const endless = ['-v', 'error', '-re', '-f', 'lavfi', '-i', 'testsrc=size=64x64', '-f', 'null', '-'];
    const failure = runFfmpeg({ args: endless, timeoutMs: 30_000, signal: AbortSignal.timeout(300) });
    await expect(failure).rejects.toMatchObject({ code: 'aborted' });
  });

  it('reports a binary that cannot be started', async () => {
    await expect(
      runFfmpeg({ args: ['-version'], timeoutMs: 5000, binaryPath: '/nonexistent/ffmpeg' }),
    ).rejects.toMatchObject({
      code: 'generator_unavailable',
      message: 'ffmpeg could not be started (ENOENT)',
    });
  });
});
