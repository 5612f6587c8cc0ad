/** The command generator runs a user's program: JSON on stdin, a file at output_path, checked by its bytes. */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CommandGenerator,
  type CommandInput,
  commandGenerator,
  type GenerationRequest,
} from '../../../src/service/generators/index.ts';
import { temporaryDirectory } from './media-probe.ts';
import { eventually, isAlive } from './process-probe.ts';

const FAKE_MODEL = fileURLToPath(new URL('./fixtures/fake-model.mjs', import.meta.url));
const fakeModel = (mode: string, options: { timeoutMs?: number; killGraceMs?: number } = {}) =>
  new CommandGenerator({ command: [process.execPath, FAKE_MODEL, mode], ...options });

const request = (
  kind: 'image' | 'video' = 'image',
  extra: Partial<GenerationRequest> = {},
): GenerationRequest => ({
  id_gen: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d',
  kind,
  family: 'A',
  prompt: 'a red fox, "quoted", ünïcödé 🦊',
  ...extra,
});

async function pidsOf(workDir: string, kind: 'image' | 'video' = 'image'): Promise<number[]> {
  const extension = kind === 'image' ? 'jpg' : 'mp4';
  const text = await readFile(`${workDir}/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d.${extension}.pids`, 'utf8');
  return text.split(' ').map(Number);
}

describe('CommandGenerator', () => {
  let workDir: { path: string; remove: () => Promise<void> };
  beforeEach(async () => {
    workDir = await temporaryDirectory();
  });
  afterEach(async () => {
    await workDir.remove();
  });

  it.each(['image', 'video'] as const)(
    'passes the operation as JSON and takes the %s it writes',
    async (kind) => {
      const media = await fakeModel('echo').generate(request(kind), { workDir: workDir.path });
      const extension = kind === 'image' ? '.jpg' : '.mp4';
      expect(media).toMatchObject({ mediaType: kind === 'image' ? 'image/jpeg' : 'video/mp4' });
      expect(media.path).toBe(`${workDir.path}/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d${extension}`);
      const bytes = await readFile(media.path);
      expect(media.bytes).toBe(bytes.length);
      const text = bytes.toString('latin1');
      const json = Buffer.from(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1), 'latin1');
      const received = JSON.parse(json.toString('utf8')) as CommandInput;
      expect(received).toEqual({
        id_gen: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d',
        kind,
        family: 'A',
        prompt: 'a red fox, "quoted", ünïcödé 🦊',
        output_path: media.path,
      });
    },
  );

  it('fails with the last stderr lines when the program exits non-zero', async () => {
    const failure = fakeModel('fail').generate(request(), { workDir: workDir.path });
    await expect(failure).rejects.toMatchObject({
      name: 'GenerationError',
      code: 'generation_failed',
      message:
        'the generator failed (exit code 3): loading weights | step 1/3 | RuntimeError: CUDA out of memory',
    });
  });

  it.each([
    {
      mode: 'png',
      kind: 'image',
      message: 'the generator wrote a file that is neither JPEG nor MP4 (image/jpeg was asked for)',
    },
    { mode: 'jpeg', kind: 'video', message: 'the generator wrote image/jpeg where video/mp4 was asked for' },
    { mode: 'empty', kind: 'image', message: 'the generator wrote an empty image file' },
    { mode: 'nothing', kind: 'video', message: 'the generator wrote no video file' },
    {
      mode: 'cut-jpeg',
      kind: 'image',
      message:
        'the generator wrote an image file, but it does not end with the end-of-image marker (FF D9): cut short?',
    },
    {
      mode: 'cut-mp4',
      kind: 'video',
      message: 'the generator wrote a video file, but it ends inside its free box: cut short?',
    },
    {
      mode: 'mp4-without-moov',
      kind: 'video',
      message: 'the generator wrote a video file, but it has no moov box (the index a player needs)',
    },
  ] as const)('refuses bad output ($mode for $kind) and removes it', async ({ mode, kind, message }) => {
    await expect(fakeModel(mode).generate(request(kind), { workDir: workDir.path })).rejects.toMatchObject({
      code: 'bad_output',
      message,
    });
    expect(await readdir(workDir.path)).toEqual([]);
  });

  it('refuses a symbolic link where the file belongs', async () => {
    await expect(fakeModel('link').generate(request(), { workDir: workDir.path })).rejects.toMatchObject({
      code: 'bad_output',
      message: 'the generator left something that is not a regular file',
    });
  });

  it('does not take a file left by an earlier attempt for its output', async () => {
    await writeFile(
      `${workDir.path}/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d.jpg`,
      Buffer.from([0xff, 0xd8, 0xff, 0]),
    );
    await expect(fakeModel('nothing').generate(request(), { workDir: workDir.path })).rejects.toMatchObject({
      code: 'bad_output',
    });
  });

  it('kills a program that runs too long, its children too', async () => {
    const failure = fakeModel('with-child', { timeoutMs: 1500 }).generate(request(), {
      workDir: workDir.path,
    });
    await expect(failure).rejects.toMatchObject({
      code: 'generator_timeout',
      message: 'the generator did not finish within 1500 ms',
    });
    const pids = await pidsOf(workDir.path);
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(await eventually(() => !isAlive(pid))).toBe(true);
  });

  it('follows SIGTERM with SIGKILL when the program ignores it', async () => {
    const started = performance.now();
    const failure = fakeModel('ignore-sigterm', { timeoutMs: 1000, killGraceMs: 300 }).generate(request(), {
      workDir: workDir.path,
    });
    await expect(failure).rejects.toMatchObject({ code: 'generator_timeout' });
    expect(performance.now() - started).toBeLessThan(5000);
    const [pid] = await pidsOf(workDir.path);
    expect(await eventually(() => !isAlive(pid!))).toBe(true);
  });

  it('kills the program when the signal aborts', async () => {
    const controller = new AbortController();
    const failure = fakeModel('hang').generate(request('video'), {
      workDir: workDir.path,
      signal: controller.signal,
    });
    expect(
      await eventually(
        () =>
          pidsOf(workDir.path, 'video').then(
            () => true,
            () => false,
          ),
        5000,
      ),
    ).toBe(true);
    controller.abort(new Error('stopping'));
    await expect(failure).rejects.toMatchObject({ code: 'aborted' });
    const [pid] = await pidsOf(workDir.path, 'video');
    expect(await eventually(() => !isAlive(pid!))).toBe(true);
  });

  it('fails on request without starting the program', async () => {
    const generator = commandGenerator(['/nonexistent/model']);
    await expect(
      generator.generate(request('image', { fail_with: 'quota exceeded' }), { workDir: workDir.path }),
    ).rejects.toMatchObject({ code: 'failed_on_request', message: 'quota exceeded' });
  });

  it('reports a program that cannot be started', async () => {
    const generator = commandGenerator(['/nonexistent/model']);
    await expect(generator.generate(request(), { workDir: workDir.path })).rejects.toMatchObject({
      code: 'generator_unavailable',
      message:
        'the generator could not be started (ENOENT: the program or its working directory does not exist)',
    });
  });

  it('needs a program', () => {
    expect(() => new CommandGenerator({ command: [] })).toThrow(TypeError);
  });
});
