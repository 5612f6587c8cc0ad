import type { FileHandle } from 'node:fs/promises';
import type { MediaType } from 'mediahook/protocol';

/** More top-level boxes than any real MP4 has: a file of tiny boxes is not walked forever. */
const MAX_TOP_LEVEL_BOXES = 10_000;
/** How far from its end a JPEG's end-of-image marker is looked for, past zero padding. */
const JPEG_TAIL_BYTES = 4096;

/**
 * What is wrong with the whole of a generated file, or null when it is whole: a JPEG must end
 * with its end-of-image marker (zero padding after it aside), and an MP4's top-level boxes must
 * fill the file exactly, a `moov` among them. An encoder whose write failed midway (a full
 * disk) may still exit 0 and leave the first bytes right: this tells such a file from a result.
 *
 * @example
 * await wholeFileProblem(handle, size, 'video/mp4'); // 'it ends inside its mdat box: cut short?'
 */
export async function wholeFileProblem(
  file: FileHandle,
  size: number,
  mediaType: MediaType,
): Promise<string | null> {
  return mediaType === 'image/jpeg' ? jpegProblem(file, size) : mp4Problem(file, size);
}

async function jpegProblem(file: FileHandle, size: number): Promise<string | null> {
  const length = Math.min(size, JPEG_TAIL_BYTES);
  const tail = Buffer.alloc(length);
  await file.read(tail, 0, length, size - length);
  let end = tail.length;
  while (end > 0 && tail[end - 1] === 0) end--;
  if (end >= 2 && tail[end - 2] === 0xff && tail[end - 1] === 0xd9) return null;
  return 'it does not end with the end-of-image marker (FF D9): cut short?';
}

async function mp4Problem(file: FileHandle, size: number): Promise<string | null> {
  const header = Buffer.alloc(16);
  let offset = 0;
  let moov = false;
  for (let boxes = 0; offset < size; boxes++) {
    if (boxes === MAX_TOP_LEVEL_BOXES) return `it has over ${MAX_TOP_LEVEL_BOXES} top-level boxes`;
    const { bytesRead } = await file.read(header, 0, 16, offset);
    if (bytesRead < 8) return `it ends inside a box header at byte ${offset}: cut short?`;
    const type = header.toString('latin1', 4, 8);
    let boxSize = header.readUInt32BE(0);
    if (boxSize === 1) {
      if (bytesRead < 16) return `it ends inside the ${type} box's header: cut short?`;
      boxSize = Number(header.readBigUInt64BE(8));
    } else if (boxSize === 0) {
      boxSize = size - offset; // "to the end of the file" (ISO/IEC 14496-12 §4.2)
    }
    if (boxSize < 8) return `its ${type} box at byte ${offset} declares ${boxSize} bytes`;
    if (offset + boxSize > size) return `it ends inside its ${type} box: cut short?`;
    if (type === 'moov') moov = true;
    offset += boxSize;
  }
  return moov ? null : 'it has no moov box (the index a player needs)';
}
