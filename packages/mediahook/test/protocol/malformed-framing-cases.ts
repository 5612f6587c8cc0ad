/**
 * Bodies broken at the multipart level (delimiters, part headers, the request Content-Type),
 * each with the stable error code a receiver must answer with. Bodies that are big on purpose
 * (floods, huge headers) live in adversarial-bodies.test.ts.
 */
import { contentTypeOf, errorParts, rawBody } from './bodies.ts';
import { B, commonParts, type MalformedCase } from './malformed-shape-cases.ts';

/** The body of a valid A error callback with its last bytes replaced by `ending`. */
function endingWith(ending: string): Buffer {
  const valid = rawBody(B, errorParts('A', 'm'));
  const close = `--${B}--\r\n`;
  return Buffer.concat([valid.subarray(0, valid.length - close.length), Buffer.from(ending, 'latin1')]);
}

/** A body whose parts are written as raw header-block text, for header-level malformations. */
export function withRawHeaders(headerBlock: string, body = 'v'): Buffer {
  return Buffer.concat([
    rawBody(B, commonParts).subarray(0, -`--${B}--\r\n`.length),
    Buffer.from(`--${B}\r\n${headerBlock}\r\n\r\n${body}\r\n--${B}--\r\n`, 'latin1'),
  ]);
}

export const FRAMING_CASES: MalformedCase[] = [
  // Multipart framing.
  {
    name: 'first header line starts with a space (CVE-2022-24434)',
    body: withRawHeaders(' Content-Disposition: form-data; name="message"'),
    code: 'malformed_multipart',
  },
  {
    name: 'first header line starts with a space, a valid Content-Disposition after it',
    body: withRawHeaders(' X-Continued: 1\r\nContent-Disposition: form-data; name="message"'),
    code: 'malformed_multipart',
  },
  {
    name: 'first header line starts with a tab',
    body: withRawHeaders('\tContent-Disposition: form-data; name="message"'),
    code: 'malformed_multipart',
  },
  {
    name: 'truncated close delimiter --b- at EOF (CVE-2025-47944)',
    body: endingWith(`--${B}-`),
    code: 'malformed_multipart',
  },
  { name: 'truncated close delimiter --b at EOF', body: endingWith(`--${B}`), code: 'malformed_multipart' },
  { name: 'close delimiter then CR at EOF', body: endingWith(`--${B}--\r`), code: 'malformed_multipart' },
  {
    name: 'close delimiter followed by other text',
    body: endingWith(`--${B}--x\r\n`),
    code: 'malformed_multipart',
  },
  {
    name: 'close delimiter, transport padding, then other text',
    body: endingWith(`--${B}-- \t x\r\n`),
    code: 'malformed_multipart',
  },
  {
    name: 'close delimiter, then CR and other text',
    body: endingWith(`--${B}--\rx`),
    code: 'malformed_multipart',
  },
  { name: 'body ends without any close delimiter', body: endingWith(''), code: 'malformed_multipart' },
  {
    // After the blank line, `--b` starts a line: a delimiter to some parsers, data to others.
    name: "a part's content starts with the boundary delimiter",
    body: withRawHeaders(
      'Content-Disposition: form-data; name="message"',
      `--${B}\r\nContent-Disposition: form-data; name="x"\r\n\r\nv`,
    ),
    code: 'malformed_multipart',
  },
  {
    // Longer than the 8 bytes a media sniff needs: the delimiter is found first however fed.
    name: "a result file's content starts with the boundary delimiter",
    body: withRawHeaders(
      'Content-Disposition: form-data; name="result_pv"; filename="r.jpg"',
      `--${B}\r\nContent-Disposition: form-data; name="x"\r\n\r\nv`,
    ),
    code: 'malformed_multipart',
  },
  {
    name: "a part's content starts with the delimiter, cut short by the close delimiter",
    body: withRawHeaders('Content-Disposition: form-data; name="message"', `--${B}--`),
    code: 'malformed_multipart',
  },
  {
    name: 'delimiter followed by a single dash',
    body: endingWith(`--${B}-x\r\n`),
    code: 'malformed_multipart',
  },
  {
    name: 'delimiter followed by other characters',
    body: endingWith(`--${B}x\r\n`),
    code: 'malformed_multipart',
  },
  {
    name: 'delimiter line ends in CR without LF',
    body: endingWith(`--${B}\rContent-Disposition: form-data; name="x"\r\n\r\n\r\n--${B}--`),
    code: 'malformed_multipart',
  },
  {
    name: 'LF-only line breaks',
    body: rawBody(B, errorParts('A', 'm'), { lineBreak: '\n' }),
    code: 'malformed_multipart',
  },
  {
    name: 'a bare LF after the close delimiter',
    body: endingWith(`--${B}--\n`),
    code: 'malformed_multipart',
  },
  {
    // Go's reader takes that line as the first delimiter and reads a status we never see.
    name: 'a preamble line starting with the boundary after a bare LF',
    body: rawBody(B, errorParts('A', 'm'), {
      preamble: `x\n--${B}\r\nContent-Disposition: form-data; name="status"\r\n\r\nhidden`,
    }),
    code: 'malformed_multipart',
  },
  {
    name: 'a body opening with a bare LF before the first delimiter',
    body: Buffer.concat([Buffer.from('\n'), rawBody(B, errorParts('A', 'm'))]),
    code: 'malformed_multipart',
  },
  {
    // With a ':' in the boundary, the delimiter line would read as a header `--x: y`.
    name: 'a delimiter inside a header block, before its blank line',
    contentType: 'multipart/form-data; boundary="x:y"',
    body: Buffer.concat([
      Buffer.from('--x:y\r\nContent-Disposition: form-data; name="status"\r\n'),
      rawBody('x:y', [{ headers: ['X-A: 1'], body: 's' }, ...errorParts('A', 'm').slice(1)]),
    ]),
    code: 'malformed_multipart',
  },
  {
    name: 'no boundary in the body at all',
    body: Buffer.from('status=success&id_gen=1'),
    code: 'malformed_multipart',
  },
  { name: 'empty body', body: Buffer.alloc(0), code: 'malformed_multipart' },
  {
    name: 'a 300-character boundary',
    contentType: contentTypeOf('b'.repeat(300)),
    body: rawBody('b'.repeat(300), errorParts('A', 'm')),
    code: 'malformed_multipart',
  },
  {
    name: 'boundary with a character RFC 2046 forbids',
    contentType: 'multipart/form-data; boundary="a@b"',
    body: rawBody('a@b', errorParts('A', 'm')),
    code: 'malformed_multipart',
  },
  {
    name: 'boundary ending in a space',
    contentType: 'multipart/form-data; boundary="ab "',
    body: rawBody('ab ', errorParts('A', 'm')),
    code: 'malformed_multipart',
  },
  {
    name: 'NUL byte in a header',
    body: withRawHeaders('Content-Disposition: form-data; name="mess\0age"'),
    code: 'malformed_multipart',
  },
  {
    name: 'NUL byte in a header name',
    body: withRawHeaders('Content-Disposition: form-data; name="message"\r\nX-\0: 1'),
    code: 'malformed_multipart',
  },
  {
    name: 'a byte beyond ASCII in a header name',
    body: withRawHeaders('Content-Disposition: form-data; name="message"\r\nX-Tr\u00e4ce: 1'),
    code: 'malformed_multipart',
  },
  {
    name: 'bare CR inside a header line',
    body: withRawHeaders('Content-Disposition: form-data; name="message"\rX: y'),
    code: 'malformed_multipart',
  },
  {
    name: 'header line without a colon',
    body: withRawHeaders('Content-Disposition: form-data; name="message"\r\nnot a header'),
    code: 'malformed_multipart',
  },
  {
    name: 'header name with a space in it',
    body: withRawHeaders('Content-Disposition: form-data; name="message"\r\nBad Name: 1'),
    code: 'malformed_multipart',
  },
  {
    name: "white space before a header's colon (RFC 5322's obsolete form)",
    body: withRawHeaders('Content-Disposition : form-data; name="message"'),
    code: 'malformed_multipart',
  },
  {
    name: "white space before an ignored header's colon",
    body: withRawHeaders('Content-Disposition: form-data; name="message"\r\nX-Trace\t: 1'),
    code: 'malformed_multipart',
  },
  {
    name: 'repeated Content-Transfer-Encoding',
    body: withRawHeaders(
      'Content-Disposition: form-data; name="message"\r\nContent-Transfer-Encoding: 8bit\r\nContent-Transfer-Encoding: base64',
    ),
    code: 'malformed_multipart',
  },
  {
    name: "a text part's Content-Type repeating charset",
    body: withRawHeaders(
      'Content-Disposition: form-data; name="message"\r\nContent-Type: text/plain; charset=utf-8; charset=iso-8859-1',
    ),
    code: 'malformed_multipart',
  },
  {
    name: "a text part's empty Content-Type",
    body: withRawHeaders('Content-Disposition: form-data; name="message"\r\nContent-Type:'),
    code: 'malformed_multipart',
  },
  {
    // Only SP and HTAB surround a value; U+3000 would be trimmed by String#trim.
    name: 'Content-Disposition value after an ideographic space',
    body: rawBody(B, [
      ...commonParts,
      { headers: ['Content-Disposition:\u3000form-data; name="message"'], body: 'v' },
    ]),
    code: 'malformed_multipart',
  },
  {
    name: 'repeated Content-Disposition',
    body: withRawHeaders(
      'Content-Disposition: form-data; name="message"\r\ncontent-disposition: form-data; name="img_message"',
    ),
    code: 'malformed_multipart',
  },
  {
    // busboy drops this part (a quote in an unquoted value), so it would read no message.
    name: 'Content-Disposition with a quote in an unquoted parameter value',
    body: withRawHeaders('Content-Disposition: form-data; x=a"; name=message; y="; name=status"'),
    code: 'malformed_multipart',
  },
  {
    name: "Content-Disposition with '=' in an unquoted parameter value",
    body: withRawHeaders('Content-Disposition: form-data; x=a=b; name=message'),
    code: 'malformed_multipart',
  },
  {
    name: 'no Content-Disposition',
    body: withRawHeaders('Content-Type: text/plain'),
    code: 'malformed_multipart',
  },
  { name: 'no headers at all', body: withRawHeaders(''), code: 'malformed_multipart' },
  {
    name: 'Content-Disposition attachment',
    body: withRawHeaders('Content-Disposition: attachment; name="message"'),
    code: 'malformed_multipart',
  },
  {
    name: 'Content-Disposition without a name',
    body: withRawHeaders('Content-Disposition: form-data; filename="a.jpg"'),
    code: 'malformed_multipart',
  },
  {
    name: 'Content-Disposition repeating name',
    body: withRawHeaders('Content-Disposition: form-data; name="message"; name="status"'),
    code: 'malformed_multipart',
  },
  {
    name: 'Content-Disposition with an unterminated quote',
    body: withRawHeaders('Content-Disposition: form-data; name="message'),
    code: 'malformed_multipart',
  },
  {
    name: 'Content-Transfer-Encoding base64',
    body: withRawHeaders(
      'Content-Disposition: form-data; name="message"\r\nContent-Transfer-Encoding: base64',
      'bQ==',
    ),
    code: 'malformed_multipart',
  },
  {
    name: 'Content-Transfer-Encoding quoted-printable',
    body: withRawHeaders(
      'Content-Disposition: form-data; name="message"\r\nContent-Transfer-Encoding: quoted-printable',
    ),
    code: 'malformed_multipart',
  },
  // Content-Type of the request.
  {
    name: 'not multipart (JSON)',
    contentType: 'application/json',
    body: Buffer.from('{"status":"success"}'),
    code: 'not_multipart',
  },
  {
    name: 'multipart, but not form-data',
    contentType: `multipart/mixed; boundary=${B}`,
    body: rawBody(B, errorParts('A', 'm')),
    code: 'not_multipart',
  },
  {
    name: 'urlencoded form',
    contentType: 'application/x-www-form-urlencoded',
    body: Buffer.from('status=success'),
    code: 'not_multipart',
  },
  {
    name: 'no Content-Type',
    contentType: null,
    body: rawBody(B, errorParts('A', 'm')),
    code: 'not_multipart',
  },
  {
    name: 'empty Content-Type',
    contentType: '',
    body: rawBody(B, errorParts('A', 'm')),
    code: 'not_multipart',
  },
  {
    name: 'missing boundary',
    contentType: 'multipart/form-data',
    body: rawBody(B, errorParts('A', 'm')),
    code: 'malformed_multipart',
  },
  {
    name: 'missing boundary, charset only',
    contentType: 'multipart/form-data; charset=utf-8',
    body: rawBody(B, errorParts('A', 'm')),
    code: 'malformed_multipart',
  },
  {
    name: 'boundary repeated',
    contentType: `multipart/form-data; boundary=${B}; boundary=${B}`,
    body: rawBody(B, errorParts('A', 'm')),
    code: 'malformed_multipart',
  },
  {
    // RFC 9110 drops the backslash of a quoted pair, Go's mime keeps it: refused, not guessed at.
    name: 'boundary with a quoted pair',
    contentType: 'multipart/form-data; boundary="mal\\formed-test-boundary"',
    body: rawBody(B, errorParts('A', 'm')),
    code: 'malformed_multipart',
  },
  {
    name: 'boundary with an unterminated quote',
    contentType: `multipart/form-data; boundary="${B}`,
    body: rawBody(B, errorParts('A', 'm')),
    code: 'malformed_multipart',
  },
];
