import { readFile } from 'node:fs/promises';
import type { MediaType } from '../protocol/index.ts';

/**
 * The results `send --sample` carries, files of the package made once by ffmpeg from its test
 * pattern (`-f lavfi -i testsrc2=s=160x90`, no metadata): a baseline JPEG and a one-second
 * H.264 MP4 with its index in front. Both pass a receiver's sniffing and open in any viewer.
 */
const SAMPLES = {
  jpeg: { file: 'sample.jpg', mediaType: 'image/jpeg' },
  mp4: { file: 'sample.mp4', mediaType: 'video/mp4' },
} as const satisfies Record<string, { file: string; mediaType: MediaType }>;

export type SampleName = keyof typeof SAMPLES;

export const SAMPLE_NAMES = Object.keys(SAMPLES) as SampleName[];

export function isSampleName(name: string): name is SampleName {
  return Object.hasOwn(SAMPLES, name);
}

/** A sample's bytes and media type; `src/cli` and `dist/cli` both sit two folders below them. */
export async function readSample(name: SampleName): Promise<{ bytes: Buffer; mediaType: MediaType }> {
  const { file, mediaType } = SAMPLES[name];
  return { bytes: await readFile(new URL(`../../samples/${file}`, import.meta.url)), mediaType };
}
