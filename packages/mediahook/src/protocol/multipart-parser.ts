import { ProtocolError } from './errors.ts';

/**
 * What a {@link MultipartParser} reports. Each method may throw a {@link ProtocolError} to stop
 * the parse; the error is thrown out of `write()`.
 */
export interface MultipartHandler {
  /**
   * A part starts; header names are lower-case, values trimmed and unfolded. A header other
   * than Content-Disposition, Content-Type and Content-Transfer-Encoding keeps its first value.
   */
  onPartBegin(headers: Map<string, string>): void;
  /** Bytes of the current part's body. The buffer may be a view of the input chunk. */
  onPartData(data: Buffer): void;
  /** The current part ended with a delimiter. */
  onPartEnd(): void;
}

export interface MultipartParserOptions {
  /** Largest header block of one part, in bytes (16 KiB by default). */
  headerBytes?: number;
}

const CR = 0x0d;
const LF = 0x0a;
const DASH = 0x2d;
const SPACE = 0x20;
const TAB = 0x09;

enum State {
  /** Looking for a delimiter in the preamble or in a part's body. */
  Body = 0,
  /** Right after `--boundary`: a `-` (close), transport padding or CR follows. */
  AfterDelimiter = 1,
  /** `--boundary-`: one more `-` closes the body. */
  CloseDash = 2,
  /** Transport padding after a delimiter, until CR. */
  Padding = 3,
  /** CR of a delimiter line seen; LF must follow. */
  DelimiterLf = 4,
  /** Collecting a part's header block. */
  Headers = 5,
  /** `--boundary--` seen: transport padding, then CRLF or the end. */
  ClosePadding = 6,
  /** CR after the close delimiter; LF must follow. */
  CloseLf = 7,
  /** After the close delimiter line: everything is ignored. */
  Epilogue = 8,
}

function malformed(message: string): ProtocolError {
  return new ProtocolError('malformed_multipart', message);
}

const LF_DELIMITER =
  'the preamble has a line starting with the boundary after a bare LF, which reads two ways';

/**
 * A strict, streaming `multipart/form-data` parser (RFC 7578 over RFC 2046). Feed it any
 * chunking of a body; it finds delimiters with the native `Buffer#indexOf`, hands part bodies
 * over without copying, and keeps at most one header block and one partial delimiter in memory.
 *
 * @example
 * const parser = new MultipartParser('xyz', { onPartBegin(h) {}, onPartData(d) {}, onPartEnd() {} });
 * for await (const chunk of req) parser.write(chunk);
 * parser.end();
 */
export class MultipartParser {
  readonly #handler: MultipartHandler;
  /** `\r\n--boundary`: a delimiter is always preceded by CRLF (the first one by a virtual CRLF). */
  readonly #delimiter: Buffer;
  #state: State = State.Body;
  #inPart = false;
  /** Bytes at the end of the last chunk that may start a delimiter: `#tail[0, #tailLength)`. */
  readonly #tail: Buffer;
  #tailLength: number;
  /** Grown on demand up to `#headerCapacity`, since most header blocks are a few dozen bytes. */
  #headerBlock: Buffer;
  readonly #headerCapacity: number;
  #headerLength = 0;
  /**
   * How much of `--boundary` the current part's content has begun with so far, or -1 once it
   * is known not to (and outside part content).
   */
  #leading = -1;
  /**
   * How much of `\n--boundary` the preamble ends with so far, or -1 once the first delimiter
   * is found (the preamble is over).
   */
  #preamble = 0;

  constructor(boundary: string, handler: MultipartHandler, options: MultipartParserOptions = {}) {
    this.#handler = handler;
    this.#delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    // The limit counts the header lines with their CRLFs; the block also holds the virtual CRLF
    // that ends the delimiter line before them and the blank line's CRLF after them.
    this.#headerCapacity = (options.headerBytes ?? 16 * 1024) + 4;
    this.#headerBlock = Buffer.allocUnsafe(Math.min(this.#headerCapacity, 1024));
    // The first delimiter may open the body without a CRLF before it: pretend there was one.
    this.#tail = Buffer.allocUnsafe(this.#delimiter.length);
    this.#tail[0] = CR;
    this.#tail[1] = LF;
    this.#tailLength = 2;
  }

  /** True once the close delimiter has been read. */
  get done(): boolean {
    return this.#state >= State.ClosePadding;
  }

  /** Parses the next chunk. Throws a {@link ProtocolError} on malformed input. */
  write(chunk: Uint8Array): void {
    const buf = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let pos = 0;
    const len = buf.length;
    while (pos < len) {
      switch (this.#state) {
        case State.Body:
          pos = this.#scanBody(buf, pos);
          break;
        case State.Headers:
          pos = this.#scanHeaders(buf, pos);
          break;
        case State.Epilogue:
          return;
        default:
          this.#stepDelimiterLine(buf[pos]!);
          pos++;
      }
    }
  }

  /** Signals the end of the body; throws when it ended before the close delimiter. */
  end(): void {
    if (this.#state === State.ClosePadding || this.#state === State.Epilogue) return;
    if (this.#state === State.CloseLf)
      throw malformed('the body ends between CR and LF after the close delimiter');
    throw malformed(
      this.#inPart || this.#state !== State.Body
        ? 'the body ends before the closing boundary'
        : 'the body has no boundary delimiter',
    );
  }

  #emit(data: Buffer): void {
    if (this.#inPart) {
      if (data.length > 0) this.#handler.onPartData(data);
    } else if (this.#preamble >= 0) {
      this.#checkPreamble(data);
    }
  }

  /**
   * Refuses a preamble with a line that starts with `--boundary` after a bare LF. RFC 2046
   * wants CRLF before a delimiter, so here it is preamble, but Go's reader (which takes LF line
   * ends) reads it as the first delimiter and sees parts that are not there for us. The first
   * real delimiter ends the preamble, so any `\n--boundary` before it has a bare LF.
   */
  #checkPreamble(data: Buffer): void {
    // `\n--boundary`: the delimiter without its CR. Its only LF is its first byte, so a match
    // can start only at an LF, and only the last LF of a chunk can start one it cuts short.
    const needle = this.#delimiter.subarray(1);
    const matched = this.#preamble;
    if (matched > 0) {
      const take = Math.min(needle.length - matched, data.length);
      if (data.compare(needle, matched, matched + take, 0, take) === 0) {
        this.#preamble += take;
        if (this.#preamble === needle.length) throw malformed(LF_DELIMITER);
        return;
      }
      this.#preamble = 0;
    }
    if (data.indexOf(needle) >= 0) throw malformed(LF_DELIMITER);
    const last = data.lastIndexOf(LF);
    const rest = data.length - last;
    if (last >= 0 && rest < needle.length && data.compare(needle, 0, rest, last) === 0) this.#preamble = rest;
  }

  #delimiterFound(): void {
    this.#preamble = -1;
    this.#leading = -1;
    if (this.#inPart) {
      this.#inPart = false;
      this.#handler.onPartEnd();
    }
    this.#state = State.AfterDelimiter;
  }

  /**
   * Refuses part content that begins with `--boundary`. After the blank line that ends the
   * headers, that is a delimiter at the start of a line, which RFC 2046 reads as the end of a
   * part without content (and so do some parsers), while others read it as data: a body two
   * parsers see differently is refused rather than guessed at. Until the check is decided the
   * matching bytes are held back, so whatever else is wrong with the content is found after it,
   * however the body is cut into chunks. Returns where the scan goes on.
   */
  #checkLeading(buf: Buffer, pos: number): number {
    const matched = this.#leading;
    const want = this.#delimiter.length - 2;
    const take = Math.min(want - matched, buf.length - pos);
    if (buf.compare(this.#delimiter, 2 + matched, 2 + matched + take, pos, pos + take) === 0) {
      this.#leading += take;
      if (this.#leading === want) {
        throw malformed("a part's content starts with the boundary delimiter, which reads two ways");
      }
      return pos + take;
    }
    this.#leading = -1;
    // Content after all. It holds no CR (no boundary does), so no delimiter starts within it.
    if (matched > 0) this.#emit(Buffer.from(this.#delimiter.subarray(2, 2 + matched)));
    return pos;
  }

  #scanBody(buf: Buffer, from: number): number {
    const pos = this.#leading >= 0 ? this.#checkLeading(buf, from) : from;
    if (pos === buf.length) return pos;
    const delimiter = this.#delimiter;
    const dlen = delimiter.length;
    const tailLength = this.#tailLength;
    if (tailLength > 0) {
      // The tail is a proper prefix of the delimiter, so it holds a CR only at its start (no
      // boundary has CR): either it continues into a delimiter here, or all of it is data.
      const need = dlen - tailLength;
      const take = Math.min(need, buf.length - pos);
      if (buf.compare(delimiter, tailLength, tailLength + take, pos, pos + take) === 0) {
        if (take === need) {
          this.#tailLength = 0;
          this.#delimiterFound();
          return pos + need;
        }
        buf.copy(this.#tail, tailLength, pos, pos + take);
        this.#tailLength += take;
        return buf.length;
      }
      this.#tailLength = 0;
      // Copied: the tail buffer is reused before the handler's consumer may read these bytes.
      const held = this.#tail.subarray(0, tailLength);
      this.#emit(this.#inPart ? Buffer.from(held) : held);
    }
    const found = buf.indexOf(delimiter, pos);
    if (found >= 0) {
      this.#emit(buf.subarray(pos, found));
      this.#delimiterFound();
      return found + dlen;
    }
    const partial = partialMatchAt(buf, delimiter, Math.max(pos, buf.length - dlen + 1));
    if (partial >= 0) {
      this.#emit(buf.subarray(pos, partial));
      this.#tailLength = buf.copy(this.#tail, 0, partial);
    } else {
      this.#emit(buf.subarray(pos));
    }
    return buf.length;
  }

  #stepDelimiterLine(byte: number): void {
    switch (this.#state) {
      case State.AfterDelimiter:
        if (byte === DASH) this.#state = State.CloseDash;
        else if (byte === CR) this.#state = State.DelimiterLf;
        else if (byte === SPACE || byte === TAB) this.#state = State.Padding;
        else
          throw malformed('a boundary delimiter is followed by other characters than white space and CRLF');
        return;
      case State.CloseDash:
        if (byte !== DASH) throw malformed('a boundary delimiter is followed by a single "-"');
        this.#state = State.ClosePadding;
        return;
      case State.Padding:
        if (byte === CR) this.#state = State.DelimiterLf;
        else if (byte !== SPACE && byte !== TAB)
          throw malformed('a boundary delimiter line has extra characters');
        return;
      case State.DelimiterLf:
        if (byte !== LF) throw malformed('a boundary delimiter line does not end with CRLF');
        this.#state = State.Headers;
        this.#headerBlock[0] = CR;
        this.#headerBlock[1] = LF;
        this.#headerLength = 2;
        return;
      case State.ClosePadding:
        if (byte === CR) this.#state = State.CloseLf;
        else if (byte !== SPACE && byte !== TAB)
          throw malformed('the close delimiter is followed by other characters');
        return;
      case State.CloseLf:
        if (byte !== LF) throw malformed('the close delimiter line does not end with CRLF');
        this.#state = State.Epilogue;
        return;
    }
  }

  #scanHeaders(buf: Buffer, start: number): number {
    let block = this.#headerBlock;
    const before = this.#headerLength;
    const copied = buf.copy(block, before, start, Math.min(buf.length, start + block.length - before));
    const filled = before + copied;
    const end = block.subarray(0, filled).indexOf(HEADER_END, Math.max(0, before - 3));
    if (end < 0) {
      if (filled === block.length) {
        if (block.length === this.#headerCapacity) {
          throw new ProtocolError(
            'headers_too_large',
            `a part's header block is larger than ${this.#headerCapacity - 4} bytes`,
          );
        }
        block = Buffer.allocUnsafe(Math.min(this.#headerCapacity, block.length * 4));
        this.#headerBlock.copy(block, 0, 0, filled);
        this.#headerBlock = block;
      }
      this.#headerLength = filled;
      return start + copied;
    }
    // A line starting with `--boundary` is a delimiter wherever it is (RFC 2046 §5.1.1), even
    // where a blank line was due; with a ':' in the boundary it would otherwise read as a header.
    if (block.subarray(0, end + 2).indexOf(this.#delimiter) >= 0) {
      throw malformed("a part's header block holds a boundary delimiter before the blank line");
    }
    const headers = parseHeaderBlock(block.subarray(2, end + 2));
    this.#state = State.Body;
    this.#inPart = true;
    this.#leading = 0;
    this.#handler.onPartBegin(headers);
    return start + (end + 4 - before);
  }
}

const HEADER_END = Buffer.from('\r\n\r\n', 'latin1');
// RFC 5322 §2.2 field names: printable ASCII but the colon. The headers a part is read by are
// tokens; any other is ignored (RFC 7578 §4.8), whatever of that set its name holds.
const HEADER_NAME = /^[\x21-\x39\x3b-\x7e]+$/;
/**
 * The headers a part is read by: a repeat of one reads two ways (parsers take the first or the
 * last), so it is refused. Any other header "MUST be ignored" (RFC 7578 §4.8), repeated or not.
 */
const READ_HEADERS = new Set(['content-disposition', 'content-type', 'content-transfer-encoding']);

/** Strips SP and HTAB, the only white space around a header value (RFC 5322 WSP, RFC 9110 OWS). */
function trimWhiteSpace(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && (text[start] === ' ' || text[start] === '\t')) start++;
  while (end > start && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--;
  return text.slice(start, end);
}

/**
 * Index of the first position ≥ `from` where the rest of `buf` is a proper prefix of `needle`,
 * or -1. Only positions holding CR can start one, since every delimiter starts with CR.
 */
function partialMatchAt(buf: Buffer, needle: Buffer, from: number): number {
  let i = buf.indexOf(CR, from);
  while (i >= 0) {
    const rest = buf.length - i;
    if (rest < needle.length && buf.compare(needle, 0, rest, i) === 0) return i;
    i = buf.indexOf(CR, i + 1);
  }
  return -1;
}

/** Parses the lines of a part's header block (each ends with CRLF). */
function parseHeaderBlock(block: Buffer): Map<string, string> {
  const headers = new Map<string, string>();
  for (let i = 0; i < block.length; i++) {
    const byte = block[i]!;
    if ((byte < 0x20 && byte !== TAB && byte !== CR && byte !== LF) || byte === 0x7f) {
      throw malformed(`a part header has the control character 0x${byte.toString(16).padStart(2, '0')}`);
    }
  }
  const text = block.toString('utf8');
  const lines = text.split('\r\n');
  lines.pop(); // the block ends with CRLF
  // The header the next folded line continues; null after an ignored repeat, whose folded
  // lines are ignored with it.
  let last: string | null | undefined;
  for (const line of lines) {
    if (line.includes('\r') || line.includes('\n')) throw malformed('a part header has a bare CR or LF');
    if (line.startsWith(' ') || line.startsWith('\t')) {
      // obs-fold: a continuation of the previous header (RFC 5322 §2.2.3).
      if (last === undefined) throw malformed('the first header line of a part starts with white space');
      if (last !== null) headers.set(last, trimWhiteSpace(`${headers.get(last)} ${trimWhiteSpace(line)}`));
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) throw malformed(`a part header line has no name: ${JSON.stringify(line.slice(0, 80))}`);
    const name = line.slice(0, colon);
    if (/[ \t]$/.test(name)) {
      // RFC 5322's obsolete form, which HTTP forbids and busboy and Go refuse: a reader that
      // takes the name as written would not see a Content-Disposition here.
      throw malformed(`a part header has white space before its colon: ${JSON.stringify(name)}`);
    }
    if (!HEADER_NAME.test(name)) {
      throw malformed(`a part header name has a character no header name has: ${JSON.stringify(name)}`);
    }
    const key = name.toLowerCase();
    if (headers.has(key)) {
      if (READ_HEADERS.has(key)) throw malformed(`a part repeats the header ${name}`);
      last = null;
      continue;
    }
    headers.set(key, trimWhiteSpace(line.slice(colon + 1)));
    last = key;
  }
  return headers;
}
