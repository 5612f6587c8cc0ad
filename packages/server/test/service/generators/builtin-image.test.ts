/** The built-in image generator makes a real JPEG that shows the prompt, drawn without system fonts. */
import { readdir, readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  BuiltinGenerator,
  GenerationError,
  type GenerationRequest,
  PromptScene,
} from '../../../src/service/generators/index.ts';
import { decodePixels, probeMedia, temporaryDirectory } from './media-probe.ts';

const ID = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
const imageRequest = (prompt: string, extra: Partial<GenerationRequest> = {}): GenerationRequest => ({
  id_gen: ID,
  kind: 'image',
  family: 'B',
  prompt,
  ...extra,
});

/** Pixels whose three channels are all bright: the prompt's ink; the background never gets there. */
function inkPixels(rgb: Buffer, width: number, rows: number): number {
  let count = 0;
  for (let i = 0; i < width * rows * 3; i += 3) {
    if (rgb[i]! > 230 && rgb[i + 1]! > 230 && rgb[i + 2]! > 225) count++;
  }
  return count;
}

describe('BuiltinGenerator, images', () => {
  let workDir: { path: string; remove: () => Promise<void> };
  beforeEach(async () => {
    workDir = await temporaryDirectory();
  });
  afterEach(async () => {
    await workDir.remove();
  });

  it('writes a decodable 640×360 JPEG named after id_gen into workDir', async () => {
    const media = await new BuiltinGenerator().generate(imageRequest('A red fox in the snow'), {
      workDir: workDir.path,
    });
    expect(media.path).toBe(`${workDir.path}/${ID}.jpg`);
    expect(media.mediaType).toBe('image/jpeg');
    const bytes = await readFile(media.path);
    expect(media.bytes).toBe(bytes.length);
    expect([...bytes.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
    expect([...bytes.subarray(-2)]).toEqual([0xff, 0xd9]);

    const probe = await probeMedia(media.path);
    expect(probe.exitCode, probe.stderr).toBe(0);
    expect(probe.codec).toBe('mjpeg');
    expect([probe.width, probe.height]).toEqual([640, 360]);
    expect((await decodePixels(media.path, { pixelFormat: 'rgb24' })).length).toBe(640 * 360 * 3);
  });

  it('draws the prompt: different prompts give different pictures, the same prompt the same one', async () => {
    const generator = new BuiltinGenerator({ image: { width: 320, height: 180 } });
    const pixelsOf = async (prompt: string, name: string) => {
      const media = await generator.generate(imageRequest(prompt, { id_gen: name }), {
        workDir: workDir.path,
      });
      return decodePixels(media.path, { pixelFormat: 'rgb24' });
    };
    // The same id_gen gives the same colours, so only the text can make a difference.
    const fox = await pixelsOf('a red fox', ID);
    const again = await pixelsOf('a red fox', ID);
    const owl = await pixelsOf('an owl at night', ID);
    const blank = await pixelsOf('   ', ID);
    expect(fox.length).toBe(320 * 180 * 3);
    expect(again.equals(fox)).toBe(true);

    let differing = 0;
    for (let i = 0; i < fox.length; i += 3) if (Math.abs(fox[i]! - owl[i]!) > 40) differing++;
    expect(differing).toBeGreaterThan(320 * 180 * 0.02);

    // Above the caption line, bright ink appears only where there is prompt text.
    const textRows = 130;
    expect(inkPixels(blank, 320, textRows)).toBe(0);
    expect(inkPixels(fox, 320, textRows)).toBeGreaterThan(500);
  });

  it('takes any prompt: non-ASCII, very long, empty of letters', async () => {
    const generator = new BuiltinGenerator({ image: { width: 320, height: 180 } });
    for (const prompt of ['日本語のプロンプト 🦊 café', 'lorem ipsum '.repeat(400), '\n\t\u0000']) {
      const media = await generator.generate(imageRequest(prompt), { workDir: workDir.path });
      expect((await probeMedia(media.path)).exitCode).toBe(0);
    }
  });

  it('fails with exactly the fail_with text and writes nothing', async () => {
    const failure = await new BuiltinGenerator()
      .generate(imageRequest('a red fox', { fail_with: 'the model is on holiday' }), {
        workDir: workDir.path,
      })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(GenerationError);
    expect(failure).toMatchObject({ code: 'failed_on_request', message: 'the model is on holiday' });
    expect(await readdir(workDir.path)).toEqual([]);
  });

  it('does not start when the signal is already aborted', async () => {
    const failure = await new BuiltinGenerator()
      .generate(imageRequest('a red fox'), { workDir: workDir.path, signal: AbortSignal.abort() })
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: 'GenerationError', code: 'aborted' });
  });
});

describe('PromptScene', () => {
  it('fits a short prompt large and cuts a very long one short', () => {
    const short = new PromptScene({ text: 'Hi', caption: '', seed: 'x' }, 640, 360);
    const long = new PromptScene({ text: 'word '.repeat(2000), caption: '', seed: 'x' }, 640, 360);
    expect(short.textScale).toBe(6);
    expect(short.textTruncated).toBe(false);
    expect(long.textScale).toBe(2);
    expect(long.textTruncated).toBe(true);
  });

  it('renders packed RGB24 frames that change over a clip and loop', () => {
    const scene = new PromptScene({ text: 'waves', caption: 'c', seed: 'x' }, 160, 90);
    const start = scene.render(0, null);
    expect(start.length).toBe(160 * 90 * 3);
    expect(scene.render(0.5, null).equals(start)).toBe(false);
    expect(scene.render(1, null).equals(start)).toBe(true);
  });

  it('refuses dimensions it cannot lay out', () => {
    expect(() => new PromptScene({ text: 'x', caption: '', seed: 'x' }, 32, 32)).toThrow(RangeError);
  });
});
