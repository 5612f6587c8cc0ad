/**
 * What the fuzzers check about one body: our decoder's outcome reduced to plain data (with the
 * sink contract checked on the way), busboy's reading of the same bytes, whether that reading
 * is one of the four shapes, and whether an accepted callback re-encodes to itself.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import busboy from 'busboy';
import {
  CallbackDecoder,
  type DecodeOptions,
  encodeCallback,
  FAMILIES,
  FAMILY_PARTS,
  type FileSink,
  ProtocolError,
  type ProtocolErrorCode,
  sniffMediaType,
} from '../../../packages/mediahook/src/protocol/index.ts';
import type { Expected } from './bodies.ts';

/** A callback as a decoder read it: what a valid body is expected to be, and its file's size and hash. */
export interface Decoded extends Omit<Expected, 'file'> {
  file?: NonNullable<Expected['file']> & { bytes: number; sha256: string | null };
}

export type Outcome = { ok: true; callback: Decoded } | { ok: false; code: ProtocolErrorCode };

/** A failure of the decoder itself (not a refusal of the body): always a defect. */
export class DecoderDefect extends Error {
  override readonly name = 'DecoderDefect';
}

interface Collecting extends FileSink {
  chunks: Buffer[];
  state: 'open' | 'closed' | 'aborted';
}

function collectingSink(slow: boolean): Collecting {
  let writes = 0;
  const sink: Collecting = {
    chunks: [],
    state: 'open',
    write(chunk) {
      if (sink.state !== 'open') throw new DecoderDefect(`sink written after ${sink.state}`);
      // Copied: the decoder may hand over views of the caller's input chunks.
      sink.chunks.push(Buffer.from(chunk));
      if (slow && ++writes % 2 === 0) return new Promise<void>((resolve) => setImmediate(resolve));
    },
    async close() {
      if (sink.state !== 'open') throw new DecoderDefect(`sink closed after ${sink.state}`);
      sink.state = 'closed';
    },
    async abort() {
      if (sink.state !== 'open') throw new DecoderDefect(`sink aborted after ${sink.state}`);
      sink.state = 'aborted';
    },
  };
  return sink;
}

/**
 * Decodes `chunks` with a fresh decoder; a refusal is an outcome, anything else (a TypeError, a
 * broken sink contract) is rethrown as a {@link DecoderDefect}. The sink contract: a valid
 * success callback closes its sink (the one it carries), a refused body aborts the sink if one
 * was made, an error callback makes none, and nothing is written after a close or an abort.
 */
export async function decode(
  contentType: string | null | undefined,
  chunks: Iterable<Uint8Array>,
  slowSink = false,
  options: Omit<DecodeOptions, 'sink'> = {},
): Promise<Outcome> {
  let sink: Collecting | null = null;
  let decoder: CallbackDecoder | undefined;
  try {
    decoder = new CallbackDecoder(contentType, {
      ...options,
      sink: () => {
        if (sink) throw new DecoderDefect('a second sink was asked for');
        sink = collectingSink(slowSink);
        return sink;
      },
    });
    for (const chunk of chunks) {
      const pending = decoder.write(chunk);
      if (pending) await pending;
    }
    const callback = await decoder.end();
    const common = {
      family: callback.family,
      status: callback.status,
      id_gen: callback.id_gen,
      time_gen: callback.time_gen,
    };
    if (callback.event === 'error') {
      if (sink) throw new DecoderDefect('an error callback opened a file sink');
      return { ok: true, callback: { event: 'error', ...common, message: callback.message } };
    }
    const used = sink as Collecting | null;
    if (used?.state !== 'closed') throw new DecoderDefect('a valid callback left its sink unclosed');
    if (callback.file.sink !== used) throw new DecoderDefect('the callback carries another sink');
    const { sink: _sink, ...file } = callback.file;
    return {
      ok: true,
      callback: { event: 'success', ...common, file: { ...file, content: Buffer.concat(used.chunks) } },
    };
  } catch (error) {
    if (error instanceof DecoderDefect) throw error;
    if (!(error instanceof ProtocolError)) {
      throw new DecoderDefect(`${(error as Error)?.name}: ${(error as Error)?.message}`, { cause: error });
    }
    await decoder?.abort(error);
    const used = sink as Collecting | null;
    if (used && used.state !== 'aborted') throw new DecoderDefect('a refused body left its sink open');
    return { ok: false, code: error.code };
  }
}

export function sameOutcome(a: Outcome, b: Outcome): boolean {
  return isDeepStrictEqual(a, b);
}

/** Why an accepted callback is not one of the four shapes, or null when it is. */
export function shapeProblem(callback: Decoded): string | null {
  const parts = FAMILY_PARTS[callback.family];
  if (!parts) return `unknown family ${callback.family}`;
  for (const text of [callback.status, callback.id_gen, callback.time_gen, callback.message ?? '']) {
    if (!text.isWellFormed()) return 'a text is not well-formed Unicode';
    if (Buffer.byteLength(text) > 64 * 1024) return 'a text is over 64 KiB';
  }
  if (Buffer.byteLength(callback.id_gen) > 256) return 'id_gen is over 256 bytes';
  if (callback.id_gen === '') return 'id_gen is empty';
  if (callback.event === 'error') return callback.message === undefined ? 'an error without message' : null;
  const file = callback.file;
  if (!file) return 'a success without a file';
  if (file.part !== parts.result) return `file part ${file.part} in family ${callback.family}`;
  if (sniffMediaType(file.content.subarray(0, 8)) !== file.mediaType)
    return 'media type not what the bytes show';
  if (!parts.mediaTypes.includes(file.mediaType)) return `${file.mediaType} in family ${callback.family}`;
  if (file.bytes !== file.content.length) return 'byte count differs from the bytes';
  if (file.sha256 !== createHash('sha256').update(file.content).digest('hex')) return 'sha256 differs';
  return null;
}

/**
 * Encodes an accepted callback again and decodes that: it must come back the same. A filename
 * with characters the encoder escapes (control characters, `"`) or that a reader takes as a
 * quoted-pair (`\`) is compared only in the other fields.
 */
export async function reencodeProblem(callback: Decoded, attempt = 0): Promise<string | null> {
  const boundary = `re-encode-${attempt}-${createHash('sha1').update(String(Math.random())).digest('hex').slice(0, 12)}`;
  const common = {
    family: callback.family,
    status: callback.status,
    id_gen: callback.id_gen,
    time_gen: callback.time_gen,
  };
  let encoded;
  try {
    encoded = await encodeCallback(
      callback.event === 'error'
        ? { ...common, event: 'error', message: callback.message! }
        : {
            ...common,
            event: 'success',
            file: callback.file!.content,
            mediaType: callback.file!.mediaType,
            filename: callback.file!.filename,
          },
      boundary,
    );
  } catch (error) {
    // A text holding this very boundary: try another one.
    if (attempt < 3 && /boundary/.test((error as Error).message))
      return reencodeProblem(callback, attempt + 1);
    return `the encoder refused it: ${(error as Error).message}`;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of encoded.body()) chunks.push(chunk);
  const again = await decode(encoded.contentType, [Buffer.concat(chunks)]);
  if (!again.ok) return `its re-encoding is refused: ${again.code}`;
  const a = {
    ...again.callback,
    file: again.callback.file && { ...again.callback.file, declaredType: null },
  };
  const b = { ...callback, file: callback.file && { ...callback.file, declaredType: null } };
  if (b.file && /[\0-\x1f\x7f"\\]/.test(b.file.filename)) a.file!.filename = b.file.filename;
  return isDeepStrictEqual(a, b) ? null : 'its re-encoding decodes differently';
}

interface BusboyPart {
  name: string | undefined;
  /** `unreadable`: a text busboy could not decode (a charset it does not know). */
  kind: 'field' | 'file' | 'unreadable';
  value: Buffer;
  filename?: string | undefined;
  mimeType: string;
}

type BusboyReading = { ok: true; parts: BusboyPart[] } | { ok: false; error: string };

/**
 * busboy's reading of a body: every part it reports, or the error it raises. busboy 1.6 never
 * finishes some bodies (a part reopened after the close delimiter): those count as unread.
 */
export function readWithBusboy(contentType: string | null, body: Buffer): Promise<BusboyReading> {
  return new Promise((settle) => {
    // Its work on a whole body is done within a few ticks of end(): a pause means it is stuck.
    const timer = setTimeout(() => settle({ ok: false, error: 'busboy never finished' }), 25);
    const resolve = (reading: BusboyReading) => {
      clearTimeout(timer);
      settle(reading);
    };
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: contentType === null ? {} : { 'content-type': contentType },
        defParamCharset: 'utf8',
        preservePath: true,
        limits: { fieldSize: 1024 * 1024 },
      });
    } catch (error) {
      resolve({ ok: false, error: (error as Error).message });
      return;
    }
    const parts: BusboyPart[] = [];
    const files: Promise<void>[] = [];
    let failed = false;
    parser.on('field', (name, value: string | undefined, info) => {
      const kind = typeof value === 'string' ? 'field' : 'unreadable';
      parts.push({ name, kind, value: Buffer.from(value ?? '', 'utf8'), mimeType: info.mimeType });
    });
    parser.on('file', (name, stream, info) => {
      const part: BusboyPart = {
        name,
        kind: 'file',
        value: Buffer.alloc(0),
        filename: info.filename,
        mimeType: info.mimeType,
      };
      parts.push(part);
      const chunks: Buffer[] = [];
      files.push(
        new Promise((done) => {
          stream.on('data', (chunk: Buffer) => chunks.push(chunk));
          stream.on('error', () => done());
          stream.on('end', () => {
            part.value = Buffer.concat(chunks);
            done();
          });
        }),
      );
    });
    parser.on('error', (error: Error) => {
      failed = true;
      resolve({ ok: false, error: error.message });
    });
    parser.on('close', () => {
      if (!failed) void Promise.all(files).then(() => resolve({ ok: true, parts }));
    });
    parser.end(body);
  });
}

/** busboy's reading as a callback when it is exactly one of the four shapes, else null. */
export function busboyCallback(reading: BusboyReading): Decoded | null {
  if (!reading.ok || reading.parts.length !== 4) return null;
  const byName = new Map(reading.parts.map((p) => [p.name, p]));
  if (byName.size !== 4) return null;
  const text = (name: string) => {
    const part = byName.get(name);
    return part?.kind === 'field' ? part.value.toString('utf8') : undefined;
  };
  const [status, id_gen, time_gen] = [text('status'), text('id_gen'), text('time_gen')];
  if (status === undefined || id_gen === undefined || time_gen === undefined) return null;
  for (const family of FAMILIES) {
    const names = FAMILY_PARTS[family];
    const message = text(names.error);
    if (message !== undefined) {
      return { family, event: 'error', status, id_gen, time_gen, message };
    }
    const file = byName.get(names.result);
    if (file?.kind === 'file' && file.filename !== undefined) {
      const mediaType = sniffMediaType(file.value.subarray(0, 8));
      if (mediaType === null || !names.mediaTypes.includes(mediaType)) return null;
      return {
        family,
        event: 'success',
        status,
        id_gen,
        time_gen,
        file: {
          part: names.result,
          filename: file.filename,
          declaredType: file.mimeType,
          mediaType,
          bytes: file.value.length,
          sha256: null,
          content: file.value,
        },
      };
    }
  }
  return null;
}

const MEDIA_TYPE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+\/[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Whether busboy's shaped reading says the same as ours: texts, part, bytes, and (where both
 * can be compared) filename and declared type. Both are informative only, and read by rules
 * that differ on purpose:
 * - the declared type: busboy reports only the lower-cased type and subtype, and its default
 *   (`text/plain`) when the header is not a clean `type/subtype`; we report the header as sent;
 * - `filename*` (which RFC 7578 forbids to senders): busboy also reads charset aliases such as
 *   `UTF8`; we read UTF-8 and ISO-8859-1 and otherwise fall back as docs/protocol.md says.
 */
export function agreesWithBusboy(ours: Decoded, theirs: Decoded, extendedFilename = false): boolean {
  const mine = { ...ours, file: ours.file && { ...ours.file, sha256: null } };
  const other = { ...theirs, file: theirs.file && { ...theirs.file } };
  if (mine.file && other.file) {
    const declared = mine.file.declaredType;
    const type = declared?.split(';')[0]!.trim();
    const clean = declared !== null && MEDIA_TYPE.test(declared.trim());
    if (type === undefined || !clean || type.toLowerCase() === other.file.declaredType) {
      other.file.declaredType = declared;
    }
    if (extendedFilename) other.file.filename = mine.file.filename;
  }
  return isDeepStrictEqual(mine, other);
}
