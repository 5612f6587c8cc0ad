/**
 * Builders of raw multipart/form-data bodies for the protocol tests. They write bytes by hand
 * (not through the encoder under test), so a test can produce every variant RFC 2046 and
 * RFC 7578 allow, and every malformation a hostile sender might try.
 */
import { createHash } from 'node:crypto';

export const CRLF = '\r\n';

/** One part as written on the wire: its header lines (without line ends) and its body. */
export interface RawPart {
  headers: string[];
  body: string | Uint8Array;
}

interface RawBodyOptions {
  /** Text before the first delimiter; a CRLF is written after it. */
  preamble?: string | Uint8Array | undefined;
  /** Text after the close delimiter line. */
  epilogue?: string | Uint8Array | undefined;
  /** Transport padding (spaces and tabs) written after every `--boundary`. */
  delimiterPadding?: string;
  /** Transport padding written after the close delimiter `--boundary--`. */
  closePadding?: string;
  /** Write CRLF after the close delimiter (default true); RFC 2046 makes it optional at EOF. */
  finalLineBreak?: boolean;
  /** Line break used everywhere; only tests of invalid bodies change it. */
  lineBreak?: string;
}

function bytesOf(value: string | Uint8Array): Buffer {
  return typeof value === 'string' ? Buffer.from(value, 'utf8') : Buffer.from(value);
}

/** A complete body: `--boundary` delimited parts, then the close delimiter. */
export function rawBody(boundary: string, parts: readonly RawPart[], options: RawBodyOptions = {}): Buffer {
  const nl = options.lineBreak ?? CRLF;
  const pieces: Buffer[] = [];
  if (options.preamble !== undefined) pieces.push(bytesOf(options.preamble), Buffer.from(nl));
  for (const part of parts) {
    const head = `--${boundary}${options.delimiterPadding ?? ''}${nl}${part.headers.map((h) => h + nl).join('')}${nl}`;
    pieces.push(Buffer.from(head, 'utf8'), bytesOf(part.body), Buffer.from(nl));
  }
  pieces.push(Buffer.from(`--${boundary}--${options.closePadding ?? ''}`, 'utf8'));
  if (options.finalLineBreak !== false) pieces.push(Buffer.from(nl));
  if (options.epilogue !== undefined) pieces.push(bytesOf(options.epilogue));
  return Buffer.concat(pieces);
}

export function contentTypeOf(boundary: string): string {
  return `multipart/form-data; boundary=${boundary}`;
}

/** A text part, the way browsers and curl write it: a Content-Disposition and nothing else. */
export function textPart(name: string, value: string | Uint8Array, extraHeaders: string[] = []): RawPart {
  return { headers: [`Content-Disposition: form-data; name="${name}"`, ...extraHeaders], body: value };
}

interface FilePartOptions {
  filename?: string;
  /** The part's Content-Type; null leaves the header out. */
  contentType?: string | null;
}

/** A file part with a filename and (by default) a Content-Type. */
export function filePart(name: string, bytes: Uint8Array, options: FilePartOptions = {}): RawPart {
  const headers = [
    `Content-Disposition: form-data; name="${name}"; filename="${options.filename ?? 'result.jpg'}"`,
  ];
  const contentType = options.contentType === undefined ? 'image/jpeg' : options.contentType;
  if (contentType !== null) headers.push(`Content-Type: ${contentType}`);
  return { headers, body: bytes };
}

const PART_NAMES = {
  A: { result: 'result_pv', error: 'message' },
  B: { result: 'res_image', error: 'img_message' },
} as const;

/** The specification's families, as this oracle spells them (independently of the protocol's table). */
type SpecFamily = keyof typeof PART_NAMES;

/** The three texts every callback carries. */
interface CommonFields {
  status: string;
  id_gen: string;
  time_gen: string;
}

export const SAMPLE_FIELDS: Readonly<CommonFields> = {
  status: 'success',
  id_gen: '0192f0e4-7c3a-7b1e-9d2f-5a6b7c8d9e0f',
  time_gen: '2026-11-22T10:00:00.123Z',
};

/** The four text parts of an error callback, in wire order. */
export function errorParts(
  family: SpecFamily,
  message: string,
  fields: CommonFields = SAMPLE_FIELDS,
): RawPart[] {
  return [
    textPart('status', fields.status),
    textPart('id_gen', fields.id_gen),
    textPart('time_gen', fields.time_gen),
    textPart(PART_NAMES[family].error, message),
  ];
}

/** The three text parts and the file part of a success callback, in wire order. */
export function successParts(
  family: SpecFamily,
  file: Uint8Array,
  fileOptions: FilePartOptions = {},
  fields: CommonFields = SAMPLE_FIELDS,
): RawPart[] {
  return [
    textPart('status', fields.status),
    textPart('id_gen', fields.id_gen),
    textPart('time_gen', fields.time_gen),
    filePart(PART_NAMES[family].result, file, fileOptions),
  ];
}

/** A small deterministic PRNG (mulberry32): same seed, same sequence, on every machine. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Bytes that look like the start of a delimiter without being one: CR, CRLF, CRLF-, and
 * CRLF--<boundary minus its last character> followed by a different byte. They make a parser
 * hold a partial match across chunk edges and then give it back as data.
 */
export function nearMisses(boundary: string): Buffer[] {
  const last = boundary.charCodeAt(boundary.length - 1);
  const other = last === 0x41 ? 0x42 : 0x41;
  return [
    Buffer.from('\r'),
    Buffer.from('\r\n'),
    Buffer.from('\r\n-'),
    Buffer.from('\r\r\n--'),
    Buffer.concat([Buffer.from(`\r\n--${boundary.slice(0, -1)}`, 'latin1'), Buffer.from([other])]),
  ];
}

function fillRandom(head: Buffer, size: number, seed: number, boundary?: string): Buffer {
  const random = seededRandom(seed);
  const out = Buffer.alloc(Math.max(size, head.length));
  head.copy(out);
  const misses = boundary ? nearMisses(boundary) : [];
  let i = head.length;
  while (i < out.length) {
    if (misses.length > 0 && random() < 0.02) {
      const miss = misses[Math.floor(random() * misses.length)]!;
      i += miss.copy(out, i);
    } else {
      out[i++] = Math.floor(random() * 256);
    }
  }
  return out;
}

/** A JPEG-looking file (SOI + APP0 JFIF) of `size` bytes; pass a boundary to sprinkle near misses. */
export function jpegBytes(size: number, seed = 1, boundary?: string): Buffer {
  const head = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00]);
  return fillRandom(head, size, seed, boundary);
}

/** An MP4-looking file (an `ftyp` box of brand isom at offset 0) of `size` bytes. */
export function mp4Bytes(size: number, seed = 1, boundary?: string): Buffer {
  const head = Buffer.concat([
    Buffer.from([0, 0, 0, 0x18]),
    Buffer.from('ftypisom\0\0\x02\0isomiso2', 'latin1'),
  ]);
  return fillRandom(head, size, seed, boundary);
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Splits a body into chunks of random sizes in [1, maxChunk], from a seed. */
export function randomChunks(body: Buffer, seed: number, maxChunk: number): Buffer[] {
  const random = seededRandom(seed);
  const chunks: Buffer[] = [];
  for (let at = 0; at < body.length;) {
    const size = 1 + Math.floor(random() * maxChunk);
    chunks.push(body.subarray(at, at + size));
    at += size;
  }
  return chunks;
}

export function byteByByte(body: Buffer): Buffer[] {
  const chunks: Buffer[] = [];
  for (let i = 0; i < body.length; i++) chunks.push(body.subarray(i, i + 1));
  return chunks;
}

export interface FeedingPlan {
  label: string;
  chunks: Buffer[];
  /** Make the sink ask the decoder to wait now and then, to exercise backpressure. */
  slowSink: boolean;
}

/** Whole, byte by byte, and random chunkings from several seeds (small and large chunks). */
export function feedingPlans(body: Buffer, options: { byteByByte?: boolean } = {}): FeedingPlan[] {
  const plans: FeedingPlan[] = [{ label: 'whole', chunks: [body], slowSink: false }];
  if (options.byteByByte !== false)
    plans.push({ label: 'byte by byte', chunks: byteByByte(body), slowSink: false });
  const maxima = [3, 17, 64, 1000, Math.max(1, body.length >> 1)];
  maxima.forEach((max, index) => {
    const seed = 101 + index * 7919;
    plans.push({
      label: `random chunks ≤${max} (seed ${seed})`,
      chunks: randomChunks(body, seed, max),
      slowSink: index % 2 === 1,
    });
  });
  return plans;
}
