import { randomFillSync } from 'node:crypto';
import {
  type EncodedCallback,
  encodeCallback,
  randomBoundary,
} from '../packages/mediahook/src/protocol/index.ts';

/** Size of each chunk fed to a decoder: what a socket typically hands over. */
export const CHUNK_BYTES = 64 * 1024;

/** A callback body held in memory, pre-cut into chunks, with what a decoder must find in it. */
export interface Body {
  label: string;
  contentType: string;
  boundary: string;
  /** Total bytes on the wire. */
  bytes: number;
  /** Views over the encoder's output; only chunks that straddle two pieces are copies. */
  chunks: Buffer[];
  expect: { status: string; id_gen: string; time_gen: string; fileBytes: number; filename: string };
}

const FIELDS = {
  status: 'success',
  id_gen: '0192f1c4-7b7e-7cc1-9a3b-5d2f8e6a1b40',
  time_gen: '2025-01-01T00:00:00.000Z',
};

/**
 * A file whose first bytes make it sniff as an MP4 (an `ftyp` box at offset 4) and whose rest is
 * random, so that a delimiter search meets the byte statistics of compressed media, not a run of
 * one byte that some searchers skip through unrealistically fast.
 */
export function randomMp4(size: number): Buffer {
  const file = Buffer.allocUnsafe(size);
  randomFillSync(file);
  file.writeUInt32BE(0x18, 0);
  file.write('ftypisom', 4, 'latin1');
  return file;
}

/** A random file with the JPEG signature `FF D8 FF E0`. */
export function randomJpeg(size: number): Buffer {
  const file = Buffer.allocUnsafe(size);
  randomFillSync(file);
  file.set([0xff, 0xd8, 0xff, 0xe0], 0);
  return file;
}

/**
 * An MP4 made of `\r\n--` followed by all but the last character of `boundary`, over and over: each
 * repetition looks like a delimiter until its last byte, so a parser must examine and reject
 * every one of them. The last boundary character is never written, so no real delimiter forms.
 */
function boundaryLikeMp4(size: number, boundary: string): Buffer {
  const near = Buffer.from(`\r\n--${boundary.slice(0, -1)}`, 'latin1');
  const file = Buffer.allocUnsafe(size);
  for (let at = 8; at < size; at += near.length) near.copy(file, at);
  file.writeUInt32BE(0x18, 0);
  file.write('ftypisom', 4, 'latin1');
  return file;
}

/** Encodes a family A success callback with the project's encoder and cuts it into chunks. */
export async function buildBody(
  label: string,
  file: Buffer,
  mediaType: 'video/mp4' | 'image/jpeg',
  boundary: string,
): Promise<Body> {
  const encoded = await encodeCallback(
    { family: 'A', event: 'success', ...FIELDS, file, mediaType },
    boundary,
  );
  const chunks = await chunk(encoded);
  return {
    label,
    contentType: encoded.contentType,
    boundary,
    bytes: encoded.contentLength,
    chunks,
    expect: {
      ...FIELDS,
      fileBytes: file.length,
      filename: `${FIELDS.id_gen}${mediaType === 'video/mp4' ? '.mp4' : '.jpg'}`,
    },
  };
}

/**
 * Cuts the encoder's output into CHUNK_BYTES pieces without joining it into one buffer first: a
 * 256 MiB body held twice would raise the peak RSS that the memory figures are measured over.
 */
async function chunk(encoded: EncodedCallback): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const piece of encoded.body()) {
    let at = 0;
    while (at < piece.length) {
      const take = Math.min(CHUNK_BYTES - pendingBytes, piece.length - at);
      pending.push(piece.subarray(at, at + take));
      pendingBytes += take;
      at += take;
      if (pendingBytes === CHUNK_BYTES) {
        chunks.push(pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes));
        pending = [];
        pendingBytes = 0;
      }
    }
  }
  if (pendingBytes > 0)
    chunks.push(pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes));
  const total = chunks.reduce((sum, c) => sum + c.length, 0);
  if (total !== encoded.contentLength) throw new Error(`chunked ${total} of ${encoded.contentLength} bytes`);
  return chunks;
}

export type BodyKind = 'mp4' | 'jpeg' | 'adversarial';

/** The bodies of the decode suite, by kind; sizes are in bytes of the file part. */
export async function makeBody(kind: BodyKind, fileBytes: number): Promise<Body> {
  const boundary = randomBoundary();
  const mib = `${Math.round(fileBytes / 2 ** 20)} MiB`;
  switch (kind) {
    case 'mp4':
      return buildBody(`MP4 ${mib}`, randomMp4(fileBytes), 'video/mp4', boundary);
    case 'jpeg':
      return buildBody(
        `JPEG ${Math.round(fileBytes / 1024)} KiB`,
        randomJpeg(fileBytes),
        'image/jpeg',
        boundary,
      );
    case 'adversarial':
      return buildBody(`boundary-like ${mib}`, boundaryLikeMp4(fileBytes, boundary), 'video/mp4', boundary);
  }
}
