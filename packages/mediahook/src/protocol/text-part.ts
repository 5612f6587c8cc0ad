import { ProtocolError } from './errors.ts';
import { parseHeaderValue } from './header-value.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Encodings whose text in the ASCII range is not the ASCII bytes (or not only them). */
const NOT_ASCII_COMPATIBLE = new Set(['utf-16le', 'utf-16be', 'iso-2022-jp', 'replacement']);

/**
 * What a charset label names, by the WHATWG Encoding Standard's label table (the one browsers
 * and undici read forms by, aliases included: `ANSI_X3.4-1968`, `ISO_8859-1`, `IBM819`,
 * `unicode-1-1-utf-8`…): `utf-8`, `ascii` for a charset whose ASCII range is ASCII (Java's
 * Apache HttpClient labels every text `ISO-8859-1`, for one), or null for one that is not
 * (UTF-16: its ASCII text is other bytes) or is unknown.
 */
function charsetKind(label: string): 'utf-8' | 'ascii' | null {
  let encoding: string;
  try {
    encoding = new TextDecoder(label).encoding;
  } catch {
    // A label this Node's ICU does not carry: the plain spellings are still known.
    return /^(?:iso-?8859-\d{1,2}|latin-?\d|l\d|windows-125\d|cp125\d)$/.test(label) ? 'ascii' : null;
  }
  if (encoding === 'utf-8') return 'utf-8';
  return NOT_ASCII_COMPATIBLE.has(encoding) ? null : 'ascii';
}

/**
 * Checks a text part's Content-Type (`null` when it has none): `text/plain`, in UTF-8 or in a
 * charset read as ASCII. Returns that other charset, whose texts must then be plain ASCII, or
 * `null` for UTF-8.
 */
export function textCharsetOf(name: string, contentType: string | null): string | null {
  if (contentType === null) return null;
  const type = parseHeaderValue(contentType);
  if (typeof type === 'string') {
    // Like a broken Content-Disposition: a header that cannot be read is a framing error, and a
    // repeated charset would read two ways.
    throw new ProtocolError(
      'malformed_multipart',
      `the part ${name} has a Content-Type that cannot be parsed: ${type}`,
    );
  }
  if (type.value !== 'text/plain') {
    throw new ProtocolError('expected_text', `the part ${name} must be text, not ${contentType}`);
  }
  const charset = type.params.get('charset')?.toLowerCase();
  if (charset === undefined) return null;
  const kind = charsetKind(charset);
  if (kind === 'utf-8') return null;
  if (kind === null) {
    throw new ProtocolError(
      'invalid_text',
      `the part ${name} is in ${JSON.stringify(charset)}; UTF-8 is required`,
    );
  }
  return charset;
}

/** A text part's value: UTF-8, or plain ASCII under the other `charset` it was declared in. */
export function decodeText(name: string, bytes: Buffer, charset: string | null): string {
  // Parsers disagree on these labels past ASCII (WHATWG reads us-ascii and iso-8859-1 as
  // windows-1252, others as Latin-1, some as UTF-8 anyway): bytes over 0x7F would mean
  // different texts to different readers, so they are refused rather than guessed at.
  if (charset !== null && bytes.some((byte) => byte > 0x7f)) {
    throw new ProtocolError(
      'invalid_text',
      `the part ${name} is declared ${charset} and holds bytes beyond ASCII; send it as UTF-8`,
    );
  }
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ProtocolError('invalid_text', `the part ${name} is not valid UTF-8`);
  }
}
