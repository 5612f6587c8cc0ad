/** The built-in video generator makes a real H.264 MP4 that browsers play: yuv420p, index first. */
import { readdir, readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BuiltinGenerator, type GenerationRequest } from '../../../src/service/generators/index.ts';
import { decodePixels, probeMedia, temporaryDirectory, topLevelBoxes } from './media-probe.ts';

const videoRequest = (extra: Partial<GenerationRequest> = {}): GenerationRequest => ({
  id_gen: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c',
  kind: 'video',
  family: 'A',
  prompt: 'Waves rolling onto a quiet beach at sunset',
  ...extra,
});

describe('BuiltinGenerator, videos', () => {
  let workDir: { path: string; remove: () => Promise<void> };
  beforeEach(async () => {
    workDir = await temporaryDirectory();
  });
  afterEach(async () => {
    await workDir.remove();
  });

  it('writes a 3 s, 25 fps, 640×360 H.264 MP4 with the index in front', async () => {
    const media = await new BuiltinGenerator().generate(videoRequest(), { workDir: workDir.path });
    expect(media.path).toBe(`${workDir.path}/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c.mp4`);
    expect(media.mediaType).toBe('video/mp4');
    const bytes = await readFile(media.path);
    expect(media.bytes).toBe(bytes.length);
    expect(bytes.toString('latin1', 4, 8)).toBe('ftyp');
    const boxes = topLevelBoxes(bytes);
    expect(boxes.indexOf('moov')).toBeGreaterThan(0);
    expect(boxes.indexOf('moov')).toBeLessThan(boxes.indexOf('mdat'));

    const probe = await probeMedia(media.path);
    expect(probe.exitCode, probe.stderr).toBe(0);
    expect(probe.codec).toBe('h264');
    expect(probe.pixelFormat).toBe('yuv420p');
    expect([probe.width, probe.height]).toEqual([640, 360]);
    expect(probe.durationSeconds).toBeGreaterThan(2.9);
    expect(probe.durationSeconds).toBeLessThan(3.1);

    // 75 frames, and the picture moves: the first frame and the middle one differ.
    const frameSize = 64 * 36;
    const frames = await decodePixels(media.path, { pixelFormat: 'gray', scale: '64:36' });
    expect(frames.length).toBe(75 * frameSize);
    const first = frames.subarray(0, frameSize);
    const middle = frames.subarray(37 * frameSize, 38 * frameSize);
    expect(first.equals(middle)).toBe(false);
  });

  it('honours the duration, frame rate and size settings', async () => {
    const generator = new BuiltinGenerator({ video: { seconds: 1, fps: 10, width: 320, height: 180 } });
    const media = await generator.generate(videoRequest(), { workDir: workDir.path });
    const probe = await probeMedia(media.path);
    expect(probe.exitCode, probe.stderr).toBe(0);
    expect([probe.width, probe.height]).toEqual([320, 180]);
    expect(probe.durationSeconds).toBeCloseTo(1, 1);
    const frames = await decodePixels(media.path, { pixelFormat: 'gray' });
    expect(frames.length).toBe(10 * 320 * 180);
  });

  it('refuses odd dimensions, which yuv420p cannot hold', async () => {
    const generator = new BuiltinGenerator({ video: { width: 321, height: 180 } });
    await expect(generator.generate(videoRequest(), { workDir: workDir.path })).rejects.toThrow(RangeError);
  });

  it('stops ffmpeg and leaves no file when aborted mid-way', async () => {
    const controller = new AbortController();
    const generator = new BuiltinGenerator({ video: { seconds: 20 } });
    const started = performance.now();
    setTimeout(() => controller.abort(new Error('stopping')), 150);
    const failure = await generator
      .generate(videoRequest(), { workDir: workDir.path, signal: controller.signal })
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: 'GenerationError', code: 'aborted' });
    expect(performance.now() - started).toBeLessThan(3000);
    expect(await readdir(workDir.path)).toEqual([]);
  });

  it('fails with exactly the fail_with text', async () => {
    await expect(
      new BuiltinGenerator().generate(videoRequest({ fail_with: 'no GPU today' }), { workDir: workDir.path }),
    ).rejects.toMatchObject({ name: 'GenerationError', code: 'failed_on_request', message: 'no GPU today' });
  });
});
