/**
 * Parsing of structured header values of the form `token; name=value; name="quoted"`
 * (RFC 9110 §5.6 parameters), as used by Content-Type and Content-Disposition.
 * Strict: a duplicated parameter or broken syntax is an error, because two parsers that
 * disagree on an ambiguous header are how multipart smuggling starts.
 */

interface HeaderValue {
  /** The leading token, lower-cased (`multipart/form-data`, `form-data`). */
  value: string;
  /** Parameters by lower-cased name. */
  params: Map<string, string>;
}

/** RFC 9110 tchar, by character code: a table, as this runs for every part of every body. */
const TOKEN_CHAR = new Uint8Array(128);
for (const ch of "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") {
  TOKEN_CHAR[ch.charCodeAt(0)] = 1;
}

function isTokenChar(code: number): boolean {
  return code < 128 && TOKEN_CHAR[code] === 1;
}

function isSpace(ch: string | undefined): boolean {
  return ch === ' ' || ch === '\t';
}

function skipSpace(input: string, from: number): number {
  let i = from;
  while (i < input.length && isSpace(input[i])) i++;
  return i;
}

/**
 * An RFC 2231 continuation's name (`filename*0`, `filename*1*`): some parsers join the pieces
 * into one value, others ignore them, so a part could be a file to one and a text to another.
 */
const CONTINUATION = /\*[0-9]+\*?$/;

interface ParseOptions {
  /**
   * Skip empty parameters (`a;; b=c`), which the HTTP grammar allows (RFC 9110 §5.6.6:
   * `*( OWS ";" OWS [ parameter ] )`) but MIME's does not (RFC 2045 §5.1), and which Go's
   * `mime` refuses in a part's Content-Disposition, dropping the part: only for HTTP headers.
   */
  emptyParameters?: boolean;
}

/** Parses a header value, or returns a string saying what is wrong with it. */
export function parseHeaderValue(input: string, options: ParseOptions = {}): HeaderValue | string {
  const n = input.length;
  let i = skipSpace(input, 0);
  const start = i;
  while (i < n && input[i] !== ';' && !isSpace(input[i])) i++;
  const value = input.slice(start, i).toLowerCase();
  if (value === '') return 'empty value';
  const params = new Map<string, string>();
  for (;;) {
    i = skipSpace(input, i);
    if (i >= n) break;
    if (input[i] !== ';')
      return `unexpected character ${JSON.stringify(input[i])} after ${JSON.stringify(value)}`;
    i = skipSpace(input, i + 1);
    if (i >= n) break; // a trailing ';' is tolerated, as common senders emit it
    if (input[i] === ';' && options.emptyParameters) continue;
    const nameStart = i;
    while (i < n && isTokenChar(input.charCodeAt(i))) i++;
    const name = input.slice(nameStart, i).toLowerCase();
    if (name === '') return `bad parameter at offset ${nameStart}`;
    i = skipSpace(input, i);
    if (input[i] !== '=') return `parameter ${name} has no value`;
    i = skipSpace(input, i + 1);
    let paramValue: string;
    if (input[i] === '"') {
      i++;
      let out = '';
      let closed = false;
      while (i < n) {
        const ch = input[i]!;
        // Senders (browsers, curl) leave a backslash as it is and escape '"' as %22; only
        // \" and \\ are read as quoted pairs, so a Windows path keeps its backslashes.
        if (ch === '\\' && (input[i + 1] === '"' || input[i + 1] === '\\')) {
          out += input[i + 1];
          i += 2;
        } else if (ch === '"') {
          i++;
          closed = true;
          break;
        } else {
          out += ch;
          i++;
        }
      }
      if (!closed) return `unterminated quoted value of ${name}`;
      paramValue = out;
    } else {
      const valueStart = i;
      while (i < n && isTokenChar(input.charCodeAt(i))) i++;
      paramValue = input.slice(valueStart, i);
      if (paramValue === '') return `parameter ${name} has an empty value`;
      // An unquoted value is a token: a quote, '=' or ',' inside one is read differently by
      // other parsers (busboy, Go's mime), which drop the part or the whole header.
      if (i < n && input[i] !== ';' && !isSpace(input[i]))
        return `unexpected character ${JSON.stringify(input[i])} in the unquoted value of ${name}`;
    }
    if (params.has(name)) return `parameter ${name} is repeated`;
    if (CONTINUATION.test(name)) {
      return `parameter ${name} is an RFC 2231 continuation, which parsers read differently (joined, or ignored)`;
    }
    params.set(name, paramValue);
  }
  return { value, params };
}

/**
 * The filename of a Content-Disposition's parameters: `filename*` (RFC 8187) when readable,
 * else `filename`. Undefined when neither is there, i.e. the part is not a file.
 */
export function filenameOf(params: Map<string, string>): string | undefined {
  const extended = params.get('filename*');
  if (extended !== undefined) {
    const decoded = decodeExtendedValue(extended);
    if (decoded !== undefined) return decoded;
  }
  // A filename* this decoder cannot read (unknown charset, bad escapes) still marks a file part;
  // without a plain filename to fall back on, its raw text is kept (filenames are informative).
  return params.get('filename') ?? extended;
}

/** Decodes an RFC 8187 extended value (`UTF-8''na%C3%AFve.jpg`), or undefined when malformed. */
export function decodeExtendedValue(raw: string): string | undefined {
  const match = /^([A-Za-z0-9!#$%&+\-^_`{}~]+)'[A-Za-z0-9-]*'(.*)$/.exec(raw);
  if (!match) return undefined;
  const charset = match[1]!.toLowerCase();
  const encoded = match[2]!;
  if (!/^(?:[A-Za-z0-9!#$&+\-.^_`|~]|%[0-9A-Fa-f]{2})*$/.test(encoded)) return undefined;
  const bytes = Buffer.from(
    encoded.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
    'latin1',
  );
  if (charset === 'utf-8') {
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      return undefined;
    }
  }
  if (charset === 'iso-8859-1') return bytes.toString('latin1');
  return undefined;
}

const FORM_DATA_TYPE = /^[ \t]*multipart\/form-data[ \t]*(?:;|$)/i;
const BOUNDARY = /^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/;

/**
 * Reads the boundary of a `multipart/form-data` Content-Type.
 * Returns `{ boundary }`, or `{ error, code }` saying why it cannot be used.
 */
export function boundaryOf(
  contentType: string | null | undefined,
): { boundary: string } | { code: 'not_multipart' | 'malformed_multipart'; error: string } {
  if (contentType == null || contentType === '') {
    return {
      code: 'not_multipart',
      error: 'the request has no Content-Type; multipart/form-data is required',
    };
  }
  const parsed = parseHeaderValue(contentType, { emptyParameters: true });
  if (typeof parsed === 'string') {
    // multipart/form-data with broken parameters is a multipart body with no usable boundary.
    const code = FORM_DATA_TYPE.test(contentType) ? 'malformed_multipart' : 'not_multipart';
    return { code, error: `the Content-Type cannot be parsed: ${parsed}` };
  }
  if (parsed.value !== 'multipart/form-data') {
    return {
      code: 'not_multipart',
      error: `the Content-Type is ${parsed.value}; multipart/form-data is required`,
    };
  }
  const boundary = parsed.params.get('boundary');
  if (boundary === undefined) {
    return { code: 'malformed_multipart', error: 'the Content-Type has no boundary parameter' };
  }
  if (!BOUNDARY.test(boundary)) {
    return {
      code: 'malformed_multipart',
      error:
        boundary.length > 70
          ? `the boundary is ${boundary.length} characters long; RFC 2046 allows at most 70`
          : 'the boundary has characters RFC 2046 does not allow',
    };
  }
  return { boundary };
}
