/**
 * A user's program that misbehaves: too much output, processes left behind, a directory where
 * the file belongs, a noisy crash. Each ends as a clear failure, with nothing left running and
 * nothing left on disk.
 */
import { chmod, readdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommandGenerator, type GenerationRequest } from '../../../src/service/generators/index.ts';
import { temporaryDirectory } from './media-probe.ts';
import { eventually, isAlive } from './process-probe.ts';

const FAKE_MODEL = fileURLToPath(new URL('./fixtures/fake-model.mjs', import.meta.url));
const WRAPPER = fileURLToPath(new URL('./fixtures/wrapper.sh', import.meta.url));
const ID_GEN = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d';
const MiB = 1024 * 1024;

const fakeModel = (mode: string, options: { timeoutMs?: number; maxOutputBytes?: number } = {}) =>
  new CommandGenerator({ command: [process.execPath, FAKE_MODEL, mode], ...options });

const request = (kind: 'image' | 'video' = 'image'): GenerationRequest => ({
  id_gen: ID_GEN,
  kind,
  family: 'A',
  prompt: 'a red fox',
});

async function pidsOf(workDir: string): Promise<number[]> {
  const text = await readFile(`${workDir}/${ID_GEN}.jpg.pids`, 'utf8');
  return text.split(' ').map(Number);
}

describe('CommandGenerator with a misbehaving program', () => {
  let workDir: { path: string; remove: () => Promise<void> };
  beforeEach(async () => {
    workDir = await temporaryDirectory();
  });
  afterEach(async () => {
    await workDir.remove();
  });

  it('stops a program whose file never stops growing, and removes the file', async () => {
    const generator = fakeModel('endless', { maxOutputBytes: MiB });
    await expect(generator.generate(request(), { workDir: workDir.path })).rejects.toMatchObject({
      code: 'bad_output',
      message: 'the generator wrote a file larger than 1 MiB, the limit; it was stopped',
    });
    expect(await readdir(workDir.path)).toEqual([]);
  });

  it('refuses a finished file larger than the limit', async () => {
    const generator = fakeModel('big', { maxOutputBytes: MiB });
    await expect(generator.generate(request(), { workDir: workDir.path })).rejects.toMatchObject({
      code: 'bad_output',
      message: 'the generator wrote a file larger than 1 MiB, the limit; it was stopped',
    });
    expect(await readdir(workDir.path)).toEqual([]);
  });

  it('kills what a program left running when it exited', async () => {
    const media = await fakeModel('leave-child').generate(request(), { workDir: workDir.path });
    expect(media.mediaType).toBe('image/jpeg');
    const [pid] = await pidsOf(workDir.path);
    expect(await eventually(() => !isAlive(pid!))).toBe(true);
  });

  it('kills the grandchildren of a wrapper script at the time limit', async () => {
    const generator = new CommandGenerator({
      command: ['sh', WRAPPER, process.execPath, 'with-child'],
      timeoutMs: 1500,
    });
    await expect(generator.generate(request(), { workDir: workDir.path })).rejects.toMatchObject({
      code: 'generator_timeout',
    });
    const pids = await pidsOf(workDir.path);
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(await eventually(() => !isAlive(pid))).toBe(true);
  });

  it('removes a directory made where the file belongs, with no local path in the message', async () => {
    const failure = fakeModel('directory').generate(request(), { workDir: workDir.path });
    await expect(failure).rejects.toMatchObject({
      code: 'bad_output',
      message: 'the generator left something that is not a regular file',
    });
    expect(await readdir(workDir.path)).toEqual([]);
  });

  it('makes a short, clean message of a noisy stderr', async () => {
    const failure = fakeModel('noisy-fail').generate(request(), { workDir: workDir.path });
    const error = (await failure.catch((e: unknown) => e)) as Error & { code: string };
    expect(error.code).toBe('generation_failed');
    expect(error.message).toMatch(
      /^the generator failed \(exit code 1\): …x+ ValueError: the prompt is too long$/,
    );
    expect(error.message.length).toBeLessThanOrEqual(1100);
    expect(error.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it('says which signal ended a program that crashed', async () => {
    await expect(fakeModel('segfault').generate(request(), { workDir: workDir.path })).rejects.toMatchObject({
      code: 'generation_failed',
      message: 'the generator failed (killed by SIGSEGV)',
    });
  });

  it('says a program that is not executable cannot be started', async () => {
    const script = `${workDir.path}/model.sh`;
    await writeFile(script, '#!/bin/sh\nexit 0\n');
    await chmod(script, 0o644);
    const generator = new CommandGenerator({ command: [script] });
    await expect(generator.generate(request(), { workDir: `${workDir.path}/out` })).rejects.toMatchObject({
      code: 'generator_unavailable',
      message: 'the generator could not be started (EACCES: the program is not executable)',
    });
  });
});
