/** Structured header values (RFC 9110 parameters, RFC 8187 extended values) and the boundary. */
import { describe, expect, it } from 'vitest';
import {
  boundaryOf,
  decodeExtendedValue,
  filenameOf,
  parseHeaderValue,
} from '../../src/protocol/header-value.ts';

describe('boundaryOf', () => {
  it.each([
    { header: 'multipart/form-data; boundary=abc', boundary: 'abc' },
    { header: 'multipart/form-data;boundary=abc', boundary: 'abc' },
    { header: 'MULTIPART/FORM-DATA; BOUNDARY=AbC', boundary: 'AbC' },
    { header: 'multipart/form-data; boundary="simple boundary"', boundary: 'simple boundary' },
    { header: 'multipart/form-data; charset=utf-8; boundary=x', boundary: 'x' },
    {
      header: 'multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW',
      boundary: '----WebKitFormBoundary7MA4YWxkTrZu0gW',
    },
    { header: `multipart/form-data; boundary="${'b'.repeat(70)}"`, boundary: 'b'.repeat(70) },
    { header: 'multipart/form-data; boundary="\'()+_,-./:=?"', boundary: "'()+_,-./:=?" },
    // RFC 9110 §5.6.6 allows empty parameters in an HTTP header.
    { header: 'multipart/form-data;; boundary=abc;;', boundary: 'abc' },
    { header: 'multipart/form-data; ; charset=utf-8 ;; boundary=abc', boundary: 'abc' },
  ])('$header → $boundary', ({ header, boundary }) => {
    expect(boundaryOf(header)).toEqual({ boundary });
  });

  it.each([
    { header: undefined, code: 'not_multipart' },
    { header: null, code: 'not_multipart' },
    { header: '', code: 'not_multipart' },
    { header: 'text/plain', code: 'not_multipart' },
    { header: 'multipart/mixed; boundary=abc', code: 'not_multipart' },
    { header: 'multipart/form-data, text/html; boundary=abc', code: 'not_multipart' },
    { header: 'multipart/form-data; boundary=a; boundary=b', code: 'malformed_multipart' },
    { header: 'multipart/form-data; boundary', code: 'malformed_multipart' },
    { header: 'multipart/form-data', code: 'malformed_multipart' },
    { header: 'multipart/form-data; boundary=""', code: 'malformed_multipart' },
    { header: `multipart/form-data; boundary=${'b'.repeat(71)}`, code: 'malformed_multipart' },
    { header: 'multipart/form-data; boundary="ends in space "', code: 'malformed_multipart' },
    { header: 'multipart/form-data; boundary="a\\"b"', code: 'malformed_multipart' },
    { header: 'multipart/form-data; boundary=a@b', code: 'malformed_multipart' },
    { header: 'multipart/form-data; boundary=', code: 'malformed_multipart' },
    { header: 'multipart/form-data; boundary="abc', code: 'malformed_multipart' },
    { header: 'multipart/form-data; boundary=abc; foo', code: 'malformed_multipart' },
    { header: 'Multipart/Form-Data ; boundary=abc extra', code: 'malformed_multipart' },
    { header: 'multipart/form-data; boundary=a=b', code: 'malformed_multipart' },
    { header: 'multipart/form-data text/html; boundary=abc', code: 'not_multipart' },
    { header: 'text/plain; boundary="abc', code: 'not_multipart' },
  ])('$header → $code', ({ header, code }) => {
    expect(boundaryOf(header)).toMatchObject({ code });
  });
});

describe('parseHeaderValue', () => {
  it('reads the token and the parameters, quoted or not, by lower-case name', () => {
    const parsed = parseHeaderValue('Form-Data; NAME="a;b"; filename=x.jpg; q="say \\"hi\\""');
    expect(parsed).toEqual({
      value: 'form-data',
      params: new Map([
        ['name', 'a;b'],
        ['filename', 'x.jpg'],
        ['q', 'say "hi"'],
      ]),
    });
  });

  it('tolerates a trailing semicolon and white space around parameters', () => {
    expect(parseHeaderValue('  form-data ;  name="x" ; ')).toEqual({
      value: 'form-data',
      params: new Map([['name', 'x']]),
    });
  });

  it.each([
    '',
    '   ',
    'form-data; name="x"; name="y"',
    'form-data; NAME="x"; name="y"',
    'form-data; name="unterminated',
    'form-data; name',
    'form-data; name=',
    'form-data; =x',
    'form-data name="x"',
    // An unquoted value is a token; other parsers stop or give up at these characters.
    'form-data; x=a"; name=message; y="; name=status"',
    'form-data; name=message; x=a"b',
    'form-data; x=a\\"; name="message"',
    'form-data; x=a=b; name=message',
    'form-data; name=message; x=a,name=status',
    'form-data; name=naïve',
    // MIME's grammar (RFC 2045 §5.1) has no empty parameter, and Go drops such a part.
    'form-data;; name="x"',
    'form-data; name="x";; filename="a.jpg"',
  ])('rejects %j', (input) => {
    expect(typeof parseHeaderValue(input)).toBe('string');
  });

  it('skips empty parameters only when told the header is HTTP', () => {
    expect(
      parseHeaderValue('multipart/form-data;; boundary=x; ;charset=utf-8', { emptyParameters: true }),
    ).toEqual({
      value: 'multipart/form-data',
      params: new Map([
        ['boundary', 'x'],
        ['charset', 'utf-8'],
      ]),
    });
  });
});

describe('parseHeaderValue and backslashes', () => {
  it('keeps a backslash as senders write it, and reads only \\" and \\\\ as quoted pairs', () => {
    const parsed = parseHeaderValue('form-data; name="res\\ult_pv"; filename="C:\\dir\\a.jpg"');
    expect(typeof parsed === 'string' ? parsed : Object.fromEntries(parsed.params)).toEqual({
      name: 'res\\ult_pv',
      filename: 'C:\\dir\\a.jpg',
    });
    const escaped = parseHeaderValue('form-data; name="a\\"b\\\\c"');
    expect(typeof escaped === 'string' ? escaped : escaped.params.get('name')).toBe('a"b\\c');
  });

  it('refuses a value that ends in a backslash written unescaped, as an unterminated string', () => {
    // curl, requests and undici write a filename `trailing\` so; busboy drops such a part.
    expect(parseHeaderValue('form-data; name="result_pv"; filename="trailing\\"')).toMatch(/unterminated/);
  });
});

describe('decodeExtendedValue (RFC 8187)', () => {
  it.each([
    { raw: "UTF-8''na%C3%AFve.jpg", text: 'naïve.jpg' },
    { raw: "utf-8'en'%E2%82%AC%20rates", text: '€ rates' },
    { raw: "iso-8859-1''caf%E9", text: 'café' },
    { raw: "UTF-8''plain", text: 'plain' },
    { raw: "UTF-8''", text: '' },
  ])('$raw → $text', ({ raw, text }) => {
    expect(decodeExtendedValue(raw)).toBe(text);
  });

  it.each([
    "UTF-8''%FF.jpg",
    "UTF-8''%C3",
    "UTF-8''a b",
    "UTF-8''%G0",
    "x-unknown''abc",
    "''abc",
    'UTF-8abc',
    "UTF-8'abc",
  ])('%j → undefined', (raw) => {
    expect(decodeExtendedValue(raw)).toBeUndefined();
  });
});

describe('filenameOf', () => {
  it.each([
    { params: [['name', 'result_pv']], filename: undefined },
    { params: [['filename', 'a.jpg']], filename: 'a.jpg' },
    { params: [['filename', '']], filename: '' },
    { params: [['filename*', "UTF-8''na%C3%AFve.jpg"]], filename: 'naïve.jpg' },
    {
      params: [
        ['filename', 'plain.jpg'],
        ['filename*', "UTF-8''na%C3%AFve.jpg"],
      ],
      filename: 'naïve.jpg',
    },
    {
      params: [
        ['filename', 'plain.jpg'],
        ['filename*', "x-unknown''abc"],
      ],
      filename: 'plain.jpg',
    },
    { params: [['filename*', "x-unknown''abc"]], filename: "x-unknown''abc" },
  ])('$params → $filename', ({ params, filename }) => {
    expect(filenameOf(new Map(params as [string, string][]))).toBe(filename);
  });
});
