import type { MediaType } from './callback-shapes.ts';

/** Bytes a sniff needs to decide: an ISO-BMFF box size (4) and the `ftyp` type (4). */
export const SNIFF_BYTES = 8;

/**
 * Tells the media type of a result file from its first bytes: JPEG starts `FF D8 FF`, an MP4
 * (ISO-BMFF) has an `ftyp` box at offset 4. Returns null for anything else.
 *
 * @example
 * sniffMediaType(Buffer.from([0xff, 0xd8, 0xff, 0xe0])); // 'image/jpeg'
 */
export function sniffMediaType(head: Uint8Array): MediaType | null {
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
  if (
    head.length >= 8 &&
    head[4] === 0x66 && // f
    head[5] === 0x74 && // t
    head[6] === 0x79 && // y
    head[7] === 0x70 // p
  ) {
    return 'video/mp4';
  }
  return null;
}
