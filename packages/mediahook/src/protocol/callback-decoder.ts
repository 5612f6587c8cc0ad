import {
  type Callback,
  COMMON_PARTS,
  classifyPartName,
  DEFAULT_LIMITS,
  FAMILIES,
  FAMILY_PARTS,
  type Family,
  type Limits,
  type MediaType,
} from './callback-shapes.ts';
import { ProtocolError } from './errors.ts';
import { FileDigest } from './file-digest.ts';
import { discardSink, type FileSink, type FileSinkFactory } from './file-sink.ts';
import { boundaryOf, filenameOf, parseHeaderValue } from './header-value.ts';
import { SNIFF_BYTES, sniffMediaType } from './media-sniff.ts';
import { MultipartParser } from './multipart-parser.ts';
import { decodeText, textCharsetOf } from './text-part.ts';

const RESULT_PART_NAMES = FAMILIES.map((family) => FAMILY_PARTS[family].result).join(', ');
const ERROR_PART_NAMES = FAMILIES.map((family) => FAMILY_PARTS[family].error).join(', ');

export interface DecodeOptions<S extends FileSink = FileSink> {
  /** Limits over {@link DEFAULT_LIMITS}. */
  limits?: Partial<Limits> | undefined;
  /** Accept only this family; the other families' parts are unexpected. */
  family?: Family | undefined;
  /** Compute the file's SHA-256 (default true). */
  hash?: boolean | undefined;
  /** Makes the sink that receives the result file's bytes; by default they are dropped. */
  sink?: FileSinkFactory<S> | undefined;
  /**
   * The whole body's length, when known (`Content-Length`): the file is no larger, so a small
   * one is hashed as it arrives, and a large one on the hashing thread from its first byte.
   */
  bodyBytes?: number | undefined;
}

interface TextPart {
  name: string;
  chunks: Buffer[];
  bytes: number;
  /**
   * The charset of a text declared in one other than UTF-8 (us-ascii, iso-8859-1…):
   * only its ASCII bytes are read alike by every parser, so a byte over 0x7F makes it invalid.
   */
  charset: string | null;
}

interface FilePart {
  name: string;
  family: Family;
  filename: string;
  declaredType: string | null;
  bytes: number;
  hash: FileDigest | null;
  /** First bytes, held until the media type is known. */
  head: Buffer[];
  mediaType: MediaType | null;
  sink: FileSink | null;
}

/**
 * Strict, streaming decoder of one callback body. Push chunks with {@link write} (await what it
 * returns), then call {@link end} for the decoded callback. Any violation of the four shapes
 * throws a {@link ProtocolError}; call {@link abort} then, so a sink drops what it got.
 *
 * @example
 * const decoder = new CallbackDecoder(req.headers['content-type']);
 * for await (const chunk of req) await decoder.write(chunk);
 * const callback = await decoder.end();
 */
export class CallbackDecoder<S extends FileSink = FileSink> {
  readonly limits: Readonly<Limits>;
  readonly #options: DecodeOptions<S>;
  readonly #parser: MultipartParser;
  readonly #texts = new Map<string, string>();
  readonly #seen = new Set<string>();
  #family: Family | null = null;
  #event: 'success' | 'error' | null = null;
  #text: TextPart | null = null;
  #file: FilePart | null = null;
  #fileDone = false;
  /** File bytes of the current input chunk, handed to the sink after the parser returns. */
  readonly #outbox: Buffer[] = [];
  #failed: unknown = null;

  constructor(contentType: string | null | undefined, options: DecodeOptions<S> = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.#options = options;
    const found = boundaryOf(contentType);
    if ('error' in found) throw new ProtocolError(found.code, found.error);
    this.#parser = new MultipartParser(
      found.boundary,
      {
        onPartBegin: (headers) => this.#partBegin(headers),
        onPartData: (data) => this.#partData(data),
        onPartEnd: () => this.#partEnd(),
      },
      { headerBytes: this.limits.headerBytes },
    );
  }

  /**
   * Decodes the next chunk of the body. Returns a promise when the sink (or the hashing of a
   * large file) asks to wait; the next `write` must come after it settles.
   */
  write(chunk: Uint8Array): Promise<void> | undefined {
    if (this.#failed) throw this.#failed;
    try {
      this.#parser.write(chunk);
    } catch (error) {
      this.#failed = error;
      throw error;
    }
    const sink = this.#outbox.length > 0 ? this.#flush() : undefined;
    const hashing = this.#file?.hash?.backlog();
    if (!hashing) return sink;
    return sink ? Promise.all([sink, hashing]).then(() => {}) : hashing;
  }

  /** Ends the body and returns the validated callback; its file's sink is closed. */
  async end(): Promise<Callback<S>> {
    if (this.#failed) throw this.#failed;
    try {
      this.#parser.end();
      const callback = this.#assemble();
      if (callback.event === 'success') {
        const [sha256] = await Promise.all([this.#file!.hash?.digest() ?? null, callback.file.sink.close()]);
        callback.file.sha256 = sha256;
      }
      return callback;
    } catch (error) {
      this.#failed = error;
      throw error;
    }
  }

  /** Gives up on the body: the sink, if any, drops what it received. */
  async abort(reason: unknown): Promise<void> {
    this.#failed ??= reason;
    this.#file?.hash?.abort();
    const sink = this.#file?.sink;
    if (sink && this.#file) {
      this.#file.sink = null;
      await sink.abort(reason);
    }
  }

  #flush(): Promise<void> | undefined {
    const chunks = this.#outbox;
    const sink = this.#file?.sink;
    let pending: Promise<void> | undefined;
    let i = 0;
    if (sink) {
      for (; i < chunks.length && !pending; i++) pending = sink.write(chunks[i]!) ?? undefined;
    }
    // The array is reused for the next chunk; only a waiting sink needs the rest kept apart.
    const rest = pending && i < chunks.length ? chunks.slice(i) : [];
    chunks.length = 0;
    if (!pending) return undefined;
    return this.#drain(sink!, pending, rest);
  }

  async #drain(sink: FileSink, pending: Promise<void>, rest: Buffer[]): Promise<void> {
    await pending;
    for (const chunk of rest) await sink.write(chunk);
  }

  #partBegin(headers: Map<string, string>): void {
    const disposition = headers.get('content-disposition');
    if (disposition === undefined) throw malformed('a part has no Content-Disposition header');
    const parsed = parseHeaderValue(disposition);
    if (typeof parsed === 'string') throw malformed(`a part's Content-Disposition is malformed: ${parsed}`);
    if (parsed.value !== 'form-data')
      throw malformed(`a part's Content-Disposition is ${parsed.value}, not form-data`);
    const name = parsed.params.get('name');
    if (name === undefined) throw malformed('a part has no name');
    const role = classifyPartName(name);
    if (!role)
      throw new ProtocolError('unexpected_part', `no callback has a part named ${JSON.stringify(name)}`);
    if (this.#seen.has(name))
      throw new ProtocolError('duplicate_part', `the part ${name} appears more than once`);
    if (role.role !== 'common')
      this.#claimShape(name, role.family, role.role === 'result' ? 'success' : 'error');
    this.#seen.add(name);
    if (this.#seen.size > this.limits.parts) {
      throw new ProtocolError('too_many_parts', `the body has more than ${this.limits.parts} parts`);
    }
    const encoding = headers.get('content-transfer-encoding')?.toLowerCase();
    if (encoding !== undefined && encoding !== '7bit' && encoding !== '8bit' && encoding !== 'binary') {
      throw malformed(`the part ${name} has Content-Transfer-Encoding ${encoding}, which is not supported`);
    }
    const filename = filenameOf(parsed.params);
    const contentType = headers.get('content-type') ?? null;
    if (role.role === 'result') {
      if (filename === undefined) {
        throw new ProtocolError(
          'expected_file',
          `the part ${name} must be a file (with a filename), not a text`,
        );
      }
      this.#file = {
        name,
        family: role.family,
        filename,
        declaredType: contentType,
        bytes: 0,
        hash: this.#options.hash === false ? null : new FileDigest({ maxBytes: this.#options.bodyBytes }),
        head: [],
        mediaType: null,
        sink: null,
      };
      return;
    }
    if (filename !== undefined) {
      throw new ProtocolError('expected_text', `the part ${name} must be a text, not a file`);
    }
    this.#text = { name, chunks: [], bytes: 0, charset: textCharsetOf(name, contentType) };
  }

  #claimShape(name: string, family: Family, event: 'success' | 'error'): void {
    if (this.#options.family && this.#options.family !== family) {
      throw new ProtocolError(
        'unexpected_part',
        `the part ${name} belongs to family ${family}; this receiver takes family ${this.#options.family}`,
      );
    }
    if (this.#family !== null && this.#family !== family) {
      throw new ProtocolError(
        'unexpected_part',
        `the part ${name} mixes family ${family} into a family ${this.#family} callback`,
      );
    }
    if (this.#event !== null && this.#event !== event) {
      throw new ProtocolError(
        'unexpected_part',
        `a callback carries a result or an error, not both (part ${name})`,
      );
    }
    this.#family = family;
    this.#event = event;
  }

  #partData(data: Buffer): void {
    const text = this.#text;
    if (text) {
      text.bytes += data.length;
      if (text.bytes > this.#textLimit(text.name)) {
        throw new ProtocolError(
          'text_too_large',
          `the part ${text.name} is larger than ${this.#textLimit(text.name)} bytes`,
        );
      }
      text.chunks.push(Buffer.from(data));
      return;
    }
    const file = this.#file!;
    const room = this.limits.fileBytes - file.bytes;
    if (data.length > room) {
      // The bytes up to the limit go first, so a media type they already refute is reported
      // as it would be had they come in a chunk of their own: the first violation in byte
      // order wins, however the body is cut.
      if (room > 0) this.#partData(data.subarray(0, room));
      throw new ProtocolError('file_too_large', `the file is larger than ${this.limits.fileBytes} bytes`);
    }
    file.bytes += data.length;
    file.hash?.update(data);
    if (file.sink) {
      this.#outbox.push(data);
      return;
    }
    if (file.head.length === 0 && data.length >= SNIFF_BYTES) {
      // The usual case: the first slice alone shows the media type, checked in place.
      this.#startSink(file, data);
      return;
    }
    // A first slice too short to tell: copied, as its chunk may be reused before the next one.
    file.head.push(Buffer.from(data));
    if (file.bytes >= SNIFF_BYTES) this.#startSink(file, Buffer.concat(file.head));
  }

  #textLimit(name: string): number {
    return name === 'id_gen'
      ? Math.min(this.limits.idGenBytes, this.limits.textBytes)
      : this.limits.textBytes;
  }

  #partEnd(): void {
    const text = this.#text;
    if (text) {
      this.#text = null;
      const bytes = Buffer.concat(text.chunks, text.bytes);
      const value = decodeText(text.name, bytes, text.charset);
      // id_gen is the idempotency key: an empty one would make every such callback a repeat of
      // the first, and the later ones would be answered 200 and dropped.
      if (value === '' && text.name === 'id_gen') {
        throw new ProtocolError('invalid_text', 'the part id_gen is empty; it must identify the operation');
      }
      this.#texts.set(text.name, value);
      return;
    }
    const file = this.#file!;
    if (!file.sink) this.#startSink(file, Buffer.concat(file.head));
    this.#fileDone = true;
  }

  /** Checks the media type on the file's first bytes, `head`, then opens the sink with them. */
  #startSink(file: FilePart, head: Buffer): void {
    file.head = [];
    const mediaType = sniffMediaType(head);
    if (mediaType === null) {
      throw new ProtocolError(
        'media_mismatch',
        `the file ${file.name} is neither a JPEG nor an MP4 (declared ${file.declaredType ?? 'no type'})`,
      );
    }
    if (!FAMILY_PARTS[file.family].mediaTypes.includes(mediaType)) {
      throw new ProtocolError(
        'media_mismatch',
        `family ${file.family} takes only JPEG, but ${file.name} holds ${mediaType}`,
      );
    }
    file.mediaType = mediaType;
    const factory = this.#options.sink ?? (discardSink as unknown as FileSinkFactory<S>);
    file.sink = factory({
      part: file.name,
      filename: file.filename,
      declaredType: file.declaredType,
      mediaType,
      fields: this.#texts,
    });
    if (head.length > 0) this.#outbox.push(head);
  }

  #assemble(): Callback<S> {
    const missing = COMMON_PARTS.filter((name) => !this.#texts.has(name));
    if (this.#family === null || this.#event === null) {
      throw new ProtocolError(
        'missing_part',
        `the callback has neither a result part (${RESULT_PART_NAMES}) nor an error part (${ERROR_PART_NAMES})${
          missing.length > 0 ? `, and lacks ${missing.join(', ')}` : ''
        }`,
      );
    }
    if (missing.length > 0)
      throw new ProtocolError('missing_part', `the callback lacks ${missing.join(', ')}`);
    const fields = {
      family: this.#family,
      status: this.#texts.get('status')!,
      id_gen: this.#texts.get('id_gen')!,
      time_gen: this.#texts.get('time_gen')!,
    };
    if (this.#event === 'error') {
      return { event: 'error', ...fields, message: this.#texts.get(FAMILY_PARTS[this.#family].error)! };
    }
    const file = this.#file!;
    if (!this.#fileDone || !file.sink || !file.mediaType) throw malformed('the result file is incomplete');
    return {
      event: 'success',
      ...fields,
      file: {
        part: file.name,
        filename: file.filename,
        declaredType: file.declaredType,
        mediaType: file.mediaType,
        bytes: file.bytes,
        // Set by end(), once the digest is in (it may come from the hashing thread).
        sha256: null,
        sink: file.sink as S,
      },
    };
  }
}

function malformed(message: string): ProtocolError {
  return new ProtocolError('malformed_multipart', message);
}
