/**
 * check's valid rows carry these files: a receiver that decodes what it accepts must be able
 * to, so they are decoded here, by ffmpeg from its stdin, to the last frame.
 */
import { describe, expect, it } from 'vitest';
import { SAMPLE_JPEG, SAMPLE_MP4 } from '../../packages/mediahook/src/cli/sample-media.ts';
import { sniffMediaType } from '../../packages/mediahook/src/protocol/index.ts';
import { runFfmpeg } from '../../packages/server/src/service/generators/ffmpeg-binary.ts';

describe('the sample result files', () => {
  it.each([
    ['JPEG', SAMPLE_JPEG, 'image/jpeg', 'mjpeg'],
    ['MP4', SAMPLE_MP4, 'video/mp4', 'mp4'],
  ])('the %s is what its bytes say and decodes without an error', async (_name, bytes, mediaType, format) => {
    expect(sniffMediaType(bytes)).toBe(mediaType);
    // -xerror: any decoding error fails the run, not only an unreadable container.
    await expect(
      runFfmpeg({
        args: ['-v', 'error', '-xerror', '-f', format, '-i', 'pipe:0', '-f', 'null', '-'],
        input: bytes,
        timeoutMs: 30_000,
      }),
    ).resolves.toBeUndefined();
  });

  it('fails the same decoding for bytes that only begin like a JPEG', async () => {
    const fake = Buffer.concat([
      SAMPLE_JPEG.subarray(0, 6),
      Buffer.alloc(200, 0x55),
      Buffer.from([0xff, 0xd9]),
    ]);
    await expect(
      runFfmpeg({
        args: ['-v', 'error', '-xerror', '-f', 'mjpeg', '-i', 'pipe:0', '-f', 'null', '-'],
        input: fake,
        timeoutMs: 30_000,
      }),
    ).rejects.toThrow();
  });
});
