/**
 * Header parameters that parsers read differently: RFC 2231 continuations, a raw quote inside a
 * quoted value. Each is refused `malformed_multipart`, wherever in the headers it is.
 */
import { contentTypeOf, errorParts, rawBody } from './bodies.ts';
import { withRawHeaders } from './malformed-framing-cases.ts';
import { B, type MalformedCase } from './malformed-shape-cases.ts';

const JPEG_START = '\xff\xd8\xff\xe0\x00\x10JFIF\x00';

export const PARAMETER_CASES: MalformedCase[] = [
  // RFC 2231 continuations: joined by some parsers (Python's email), ignored by others.
  {
    // Read as a text by a parser that ignores the continuation, as a file by one that joins it.
    name: 'a text part with a filename*0 continuation',
    body: withRawHeaders('Content-Disposition: form-data; name="message"; filename*0="a.jpg"'),
    code: 'malformed_multipart',
  },
  {
    name: 'a text part with an extended filename*0* continuation',
    body: withRawHeaders(`Content-Disposition: form-data; name="message"; filename*0*=UTF-8''a.jpg`),
    code: 'malformed_multipart',
  },
  {
    name: 'a result file named only in continuations',
    body: withRawHeaders(
      'Content-Disposition: form-data; name="result_pv"; filename*0="r"; filename*1=".jpg"\r\nContent-Type: image/jpeg',
      JPEG_START,
    ),
    code: 'malformed_multipart',
  },
  {
    name: 'a result file with a filename and a filename*0 continuation',
    body: withRawHeaders(
      'Content-Disposition: form-data; name="result_pv"; filename="r.jpg"; filename*0="other.jpg"',
      JPEG_START,
    ),
    code: 'malformed_multipart',
  },
  {
    name: 'a part name in name*0 and name*1 continuations',
    body: withRawHeaders('Content-Disposition: form-data; name*0="mess"; name*1="age"'),
    code: 'malformed_multipart',
  },
  {
    name: 'a part name beside a name*0 continuation naming another part',
    body: withRawHeaders('Content-Disposition: form-data; name="message"; name*0="status"'),
    code: 'malformed_multipart',
  },
  {
    name: "a text part's Content-Type with a charset*0 continuation",
    body: withRawHeaders(
      'Content-Disposition: form-data; name="message"\r\nContent-Type: text/plain; charset*0=utf-8',
    ),
    code: 'malformed_multipart',
  },
  {
    name: "the request Content-Type's boundary beside a boundary*0 continuation",
    contentType: `${contentTypeOf(B)}; boundary*0=other`,
    body: rawBody(B, errorParts('A', 'm')),
    code: 'malformed_multipart',
  },
  // A raw quote ends a quoted value: what follows it is not a parameter.
  {
    name: 'a raw quote inside a quoted name',
    body: withRawHeaders('Content-Disposition: form-data; name="mess"age"'),
    code: 'malformed_multipart',
  },
  {
    name: 'a raw quote inside a quoted filename',
    body: withRawHeaders('Content-Disposition: form-data; name="result_pv"; filename="a"b.jpg"', JPEG_START),
    code: 'malformed_multipart',
  },
  {
    name: 'a parameter without a value',
    body: withRawHeaders('Content-Disposition: form-data; name="message"; filename'),
    code: 'malformed_multipart',
  },
  {
    name: 'a parameter with an empty unquoted value',
    body: withRawHeaders('Content-Disposition: form-data; name="message"; filename='),
    code: 'malformed_multipart',
  },
  {
    name: 'a quoted value followed by a token without a semicolon',
    body: withRawHeaders('Content-Disposition: form-data; name="message"status'),
    code: 'malformed_multipart',
  },
];
