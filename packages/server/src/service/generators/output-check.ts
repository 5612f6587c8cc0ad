import { lstat, open } from 'node:fs/promises';
import { SNIFF_BYTES, sniffMediaType } from 'mediahook/protocol';
import { GenerationError } from './generation-error.ts';
import { wholeFileProblem } from './media-structure.ts';
import { type GeneratedMedia, type GenerationRequest, mediaTypeOf } from './generator.ts';

/**
 * Checks a file a generator left behind: it exists, is a regular non-empty file (not a link), its bytes
 * (not its name) are the media type the request asked for (JPEG for an image, MP4 for a video),
 * and it is whole: a JPEG ends with its end-of-image marker, an MP4's boxes fill it, `moov` included.
 * Anything else is a `bad_output` failure whose message says what was wrong, with `who` as the
 * subject (e.g. `the generator`).
 *
 * @example
 * const media = await checkGeneratedFile('/tmp/work/0190.jpg', 'image', 'the generator');
 * // { path: '/tmp/work/0190.jpg', mediaType: 'image/jpeg', bytes: 48213 }
 */
export async function checkGeneratedFile(
  path: string,
  kind: GenerationRequest['kind'],
  who: string,
): Promise<GeneratedMedia> {
  const expected = mediaTypeOf(kind);
  let size: number;
  try {
    // lstat: a symbolic link is refused rather than followed to wherever it points.
    const info = await lstat(path);
    if (!info.isFile())
      throw new GenerationError('bad_output', `${who} left something that is not a regular file`);
    size = info.size;
  } catch (error) {
    if (error instanceof GenerationError) throw error;
    throw new GenerationError('bad_output', `${who} wrote no ${kind} file`, { cause: error });
  }
  if (size === 0) throw new GenerationError('bad_output', `${who} wrote an empty ${kind} file`);

  const head = Buffer.alloc(SNIFF_BYTES);
  const file = await open(path, 'r');
  try {
    const { bytesRead } = await file.read(head, 0, SNIFF_BYTES, 0);
    const detected = sniffMediaType(head.subarray(0, bytesRead));
    if (detected === null) {
      throw new GenerationError(
        'bad_output',
        `${who} wrote a file that is neither JPEG nor MP4 (${expected} was asked for)`,
      );
    }
    if (detected !== expected) {
      throw new GenerationError('bad_output', `${who} wrote ${detected} where ${expected} was asked for`);
    }
    const problem = await wholeFileProblem(file, size, detected);
    if (problem !== null)
      throw new GenerationError(
        'bad_output',
        `${who} wrote ${kind === 'image' ? 'an image' : 'a video'} file, but ${problem}`,
      );
    return { path, mediaType: detected, bytes: size };
  } finally {
    await file.close();
  }
}
