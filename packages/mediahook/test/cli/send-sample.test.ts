/**
 * `mediahook send --sample`: the built-in results pass a strict receiver as what they are,
 * and are real pictures: ffmpeg decodes them.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers.ts';
import { type Listener, startListen } from './listen-helpers.ts';

const run = promisify(execFile);
const ffmpeg = (createRequire(import.meta.url)('@ffmpeg-installer/ffmpeg') as { path: string }).path;

let out: string;
let listener: Listener;

beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), 'mediahook-sample-'));
  listener = await startListen(['--out', out, '--json', '--keep-requests', '0']);
});
afterAll(async () => {
  await listener.stop();
  await rm(out, { recursive: true, force: true });
});

describe('mediahook send --sample', () => {
  it.each([
    ['jpeg', 'image/jpeg', '.jpg'],
    ['mp4', 'video/mp4', '.mp4'],
  ])('sends the %s sample, accepted as %s and decodable', async (sample, mediaType, extension) => {
    const id = `sample-${sample}`;
    const sent = await runCli(['send', listener.url, '--family', 'A', '--sample', sample, '--id', id]);
    expect(sent.code).toBe(0);
    const lines = await listener.waitForLines(sample === 'jpeg' ? 1 : 2);
    const record = lines.map((line) => JSON.parse(line)).find((r) => r.id_gen === id);
    expect(record).toMatchObject({ event: 'success', file: { mediaType } });
    const stored = join(out, `${id}${extension}`);
    expect(record.file.path).toBe(stored);
    const bytes = await readFile(stored);
    // A few KB: small enough to ship, large enough to look at.
    expect(bytes.length).toBeGreaterThan(1024);
    expect(bytes.length).toBeLessThan(16 * 1024);
    await expect(run(ffmpeg, ['-v', 'error', '-i', stored, '-f', 'null', '-'])).resolves.toBeDefined();
  });

  it('keeps the JPEG baseline (SOF0, no progressive SOF2)', async () => {
    const jpeg = await readFile(new URL('../../samples/sample.jpg', import.meta.url));
    expect(jpeg.includes(Buffer.from([0xff, 0xc0]))).toBe(true);
    expect(jpeg.includes(Buffer.from([0xff, 0xc2]))).toBe(false);
  });

  it.concurrent.for([
    {
      why: 'an unknown sample',
      args: ['--family', 'A', '--sample', 'gif'],
      error: '--sample is jpeg or mp4',
    },
    {
      why: 'an MP4 in family B',
      args: ['--family', 'B', '--sample', 'mp4'],
      error: 'family B carries image/jpeg only',
    },
    {
      why: 'a sample and a file',
      args: ['--family', 'A', '--sample', 'jpeg', '--file', 'x.jpg'],
      error: 'exactly one',
    },
  ])('exits 2 on $why', async ({ args, error }) => {
    const result = await runCli(['send', 'http://127.0.0.1:9/', ...args]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(error);
  });
});
