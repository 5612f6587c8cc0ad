/**
 * Hostile bodies, after the inputs behind published multipart parser CVEs (a header line
 * starting with white space, a truncated close delimiter, an empty field name, CR/LF floods,
 * part and header count explosions, megabyte header lines, overlong boundaries), and names
 * that try to walk out of the output directory. Each says which answer it must get.
 */

export const BOUNDARY = 'abuse-boundary-5f1c';

export interface AbuseCase {
  name: string;
  contentType: string | null;
  body: Buffer;
  /** The HTTP status, and for a 500 the receiver's error code. */
  expect: { status: number; code?: string };
  /** Set when the body is valid and its file must land under this name in the output directory. */
  storedAs?: RegExp;
}

const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(2000, 0x42)]);

function part(headers: string[], body: string | Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\n${headers.join('\r\n')}\r\n\r\n`),
    Buffer.from(body),
    Buffer.from('\r\n'),
  ]);
}

const text = (name: string, value: string) => part([`Content-Disposition: form-data; name="${name}"`], value);
const file = (filename: string, bytes = JPEG, name = 'result_pv') =>
  part(
    [`Content-Disposition: form-data; name="${name}"; filename="${filename}"`, 'Content-Type: image/jpeg'],
    bytes,
  );
const close = Buffer.from(`--${BOUNDARY}--\r\n`);
const commons = (id: string) => [
  text('status', 'success'),
  text('id_gen', id),
  text('time_gen', '2026-11-22T10:00:00.000Z'),
];

function body(...pieces: Buffer[]): Buffer {
  return Buffer.concat(pieces);
}

const ct = `multipart/form-data; boundary=${BOUNDARY}`;

/** The cases; `unique` makes every `id_gen` new, so a repeat run is never a duplicate. */
export function abuseCases(unique: string): AbuseCase[] {
  const id = (n: number) => `abuse-${unique}-${n}`;
  const malformed = { status: 500, code: 'malformed_multipart' };
  const tooLarge = { status: 500, code: 'headers_too_large' };
  return [
    {
      name: 'first header line starts with a space',
      contentType: ct,
      body: body(part([' Content-Disposition: form-data; name="status"'], 'x'), close),
      expect: malformed,
    },
    {
      name: 'truncated close delimiter (--b-)',
      contentType: ct,
      body: body(...commons(id(1)), file('a.jpg'), Buffer.from(`--${BOUNDARY}-`)),
      expect: malformed,
    },
    {
      name: 'no close delimiter at all',
      contentType: ct,
      body: body(...commons(id(2)), file('a.jpg')),
      expect: malformed,
    },
    {
      name: 'empty field name',
      contentType: ct,
      body: body(text('', 'x'), ...commons(id(3)), close),
      expect: { status: 500, code: 'unexpected_part' },
    },
    {
      name: 'CRLF flood where the headers belong',
      contentType: ct,
      body: body(Buffer.from(`--${BOUNDARY}\r\n`), Buffer.alloc(2 * 1024 * 1024, '\r\n'), close),
      expect: malformed,
    },
    {
      name: 'LF flood in a header block (1 MiB)',
      contentType: ct,
      body: body(
        Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="status"`),
        Buffer.alloc(1024 * 1024, '\n'),
        close,
      ),
      expect: tooLarge,
    },
    {
      name: 'CR flood in a header block (1 MiB)',
      contentType: ct,
      body: body(
        Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="status"`),
        Buffer.alloc(1024 * 1024, '\r'),
        close,
      ),
      expect: tooLarge,
    },
    {
      name: 'CRLF flood as the preamble (16 MiB) before a valid callback: accepted, in bounded memory',
      contentType: ct,
      body: body(
        Buffer.alloc(16 * 1024 * 1024, '\r\n'),
        Buffer.from('\r\n'),
        ...commons(id(4)),
        file('a.jpg'),
        close,
      ),
      expect: { status: 200 },
      storedAs: new RegExp(`^${id(4)}\\.jpg$`),
    },
    {
      name: '10,000 repeated parts',
      contentType: ct,
      body: body(...commons(id(5)), ...Array.from({ length: 10_000 }, () => text('status', 'x')), close),
      expect: { status: 500, code: 'duplicate_part' },
    },
    {
      name: '10,000 parts of unknown names',
      contentType: ct,
      body: body(...Array.from({ length: 10_000 }, (_, n) => text(`p${n}`, 'x')), close),
      expect: { status: 500, code: 'unexpected_part' },
    },
    {
      name: '100,000 header lines in one part',
      contentType: ct,
      body: body(
        part(
          [
            'Content-Disposition: form-data; name="status"',
            ...Array.from({ length: 100_000 }, (_, n) => `X-H${n}: v`),
          ],
          'x',
        ),
        close,
      ),
      expect: tooLarge,
    },
    {
      name: 'a 1 MiB header line',
      contentType: ct,
      body: body(
        part([`Content-Disposition: form-data; name="status"; x="${'a'.repeat(1024 * 1024)}"`], 'x'),
        close,
      ),
      expect: tooLarge,
    },
    {
      name: 'boundary of 71 characters',
      contentType: `multipart/form-data; boundary=${'b'.repeat(71)}`,
      body: Buffer.from(`--${'b'.repeat(71)}--\r\n`),
      expect: malformed,
    },
    {
      name: 'boundary of 10,000 characters',
      contentType: `multipart/form-data; boundary=${'b'.repeat(10_000)}`,
      body: Buffer.from(`--${'b'.repeat(10_000)}--\r\n`),
      expect: malformed,
    },
    {
      name: 'a Content-Type of 20 KiB: over the HTTP header limit',
      contentType: `multipart/form-data; boundary=${'b'.repeat(20_000)}`,
      body: Buffer.from('x'),
      expect: { status: 500, code: 'headers_too_large' },
    },
    {
      name: 'NUL in a part header',
      contentType: ct,
      body: body(part(['Content-Disposition: form-data; name="status"', 'X-A: a\0b'], 'x'), close),
      expect: malformed,
    },
    {
      name: 'base64 transfer encoding',
      contentType: ct,
      body: body(
        part(['Content-Disposition: form-data; name="status"', 'Content-Transfer-Encoding: base64'], 'eA=='),
        close,
      ),
      expect: malformed,
    },
    {
      name: 'no Content-Type',
      contentType: null,
      body: body(...commons(id(6)), close),
      expect: { status: 500, code: 'not_multipart' },
    },
    {
      name: 'id_gen of 257 bytes',
      contentType: ct,
      body: body(
        text('status', 's'),
        text('id_gen', 'i'.repeat(257)),
        text('time_gen', 't'),
        text('message', 'm'),
        close,
      ),
      expect: { status: 500, code: 'text_too_large' },
    },
    {
      name: 'a PNG where the JPEG belongs',
      contentType: ct,
      body: body(...commons(id(7)), file('a.jpg', Buffer.from('\x89PNG\r\n\x1a\n0000', 'latin1')), close),
      expect: { status: 500, code: 'media_mismatch' },
    },
    ...traversalCases(id),
  ];
}

/** Valid callbacks whose filename or `id_gen` is a path: stored under a safe name, in place. */
function traversalCases(id: (n: number) => string): AbuseCase[] {
  const filenames = [
    '../../../../tmp/evil.jpg',
    '/etc/passwd',
    '..\\..\\windows\\evil.jpg',
    'a/../../b.jpg',
    '%2e%2e%2fevil.jpg',
  ];
  const ids = ['../../evil', '/tmp/evil', '..', '.', 'a/b', '..\\evil', 'evil\0.jpg', '.hidden'];
  const cases: AbuseCase[] = filenames.map((name, n) => ({
    name: `filename ${JSON.stringify(name)}`,
    contentType: ct,
    body: body(...commons(id(100 + n)), file(name), close),
    expect: { status: 200 },
    storedAs: new RegExp(`^${id(100 + n)}\\.jpg$`),
  }));
  for (const value of ids) {
    cases.push({
      name: `id_gen ${JSON.stringify(value)}`,
      contentType: ct,
      body: body(
        text('status', 'success'),
        text('id_gen', value),
        text('time_gen', 't'),
        file('x.jpg'),
        close,
      ),
      expect: { status: 200 },
      // Not a safe name: stored as `_` and the SHA-256 of the id.
      storedAs: /^_[0-9a-f]{64}\.jpg$/,
    });
  }
  return cases;
}
