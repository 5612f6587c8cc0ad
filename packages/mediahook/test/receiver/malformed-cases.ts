/**
 * Bodies that break the four shapes, written byte by byte (the encoder cannot produce them),
 * each with the error code a receiver must answer.
 */
import { jpegBytes, mp4Bytes } from './helpers.ts';

interface Part {
  name: string;
  body: string | Uint8Array;
  filename?: string;
  /** Content-Type of the part; files default to image/jpeg, texts have none. */
  type?: string;
  /** Header lines used instead of the usual Content-Disposition (and Content-Type). */
  rawHeaders?: string[];
}

const BOUNDARY = 'test-boundary-7d1f0c';

/** A multipart body; `close: false` leaves out the close delimiter (a truncated body). */
function multipart(parts: readonly Part[], options: { close?: boolean } = {}): Buffer {
  const pieces: Buffer[] = [];
  for (const part of parts) {
    const headers = part.rawHeaders ?? [
      `Content-Disposition: form-data; name="${part.name}"${part.filename === undefined ? '' : `; filename="${part.filename}"`}`,
      ...(part.type !== undefined
        ? [`Content-Type: ${part.type}`]
        : part.filename !== undefined
          ? ['Content-Type: image/jpeg']
          : []),
    ];
    pieces.push(Buffer.from(`--${BOUNDARY}\r\n${headers.join('\r\n')}\r\n\r\n`, 'utf8'));
    pieces.push(typeof part.body === 'string' ? Buffer.from(part.body, 'utf8') : Buffer.from(part.body));
    pieces.push(Buffer.from('\r\n'));
  }
  if (options.close !== false) pieces.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(pieces);
}

const MULTIPART_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

const common = (id: string): Part[] => [
  { name: 'status', body: 'success' },
  { name: 'id_gen', body: id },
  { name: 'time_gen', body: '2024-05-01T10:00:00.000Z' },
];

const file = (name = 'result_pv', bytes: Uint8Array = jpegBytes(3000)): Part => ({
  name,
  body: bytes,
  filename: 'result.jpg',
});

interface MalformedCase {
  why: string;
  code: string;
  contentType: string | null;
  body: (id: string) => Buffer;
}

const withParts = (why: string, code: string, parts: (id: string) => Part[]): MalformedCase => ({
  why,
  code,
  contentType: MULTIPART_TYPE,
  body: (id) => multipart(parts(id)),
});

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), jpegBytes(500)]);

export const MALFORMED: readonly MalformedCase[] = [
  withParts('no id_gen', 'missing_part', (id) => [common(id)[0]!, common(id)[2]!, file()]),
  withParts('neither a result nor an error part', 'missing_part', (id) => common(id)),
  withParts('an extra part after the file', 'unexpected_part', (id) => [
    ...common(id),
    file(),
    { name: 'extra', body: 'x' },
  ]),
  withParts('an unknown part before the file', 'unexpected_part', (id) => [
    ...common(id),
    { name: 'callback_url', body: 'x' },
    file(),
  ]),
  withParts('status twice', 'duplicate_part', (id) => [
    ...common(id),
    { name: 'status', body: 'again' },
    file(),
  ]),
  withParts('the result file twice', 'duplicate_part', (id) => [...common(id), file(), file()]),
  withParts('a result and an error', 'unexpected_part', (id) => [
    ...common(id),
    file(),
    { name: 'message', body: 'failed too' },
  ]),
  withParts('family A result with a family B error part', 'unexpected_part', (id) => [
    ...common(id),
    { name: 'img_message', body: 'mixed' },
    file(),
  ]),
  withParts('a file in an error callback', 'expected_text', (id) => [
    ...common(id),
    { name: 'message', body: 'oops', filename: 'message.txt', type: 'text/plain' },
  ]),
  withParts('a text where the file belongs', 'expected_file', (id) => [
    ...common(id),
    { name: 'result_pv', body: 'not a file' },
  ]),
  withParts('a text part with a media type', 'expected_text', (id) => [
    { name: 'status', body: 'success', type: 'application/json' },
    ...common(id).slice(1),
    file(),
  ]),
  withParts('a PNG in result_pv', 'media_mismatch', (id) => [...common(id), file('result_pv', PNG)]),
  withParts('an MP4 in family B', 'media_mismatch', (id) => [...common(id), file('res_image', mp4Bytes())]),
  withParts('an empty file', 'media_mismatch', (id) => [...common(id), file('result_pv', Buffer.alloc(0))]),
  withParts('status that is not UTF-8', 'invalid_text', (id) => [
    { name: 'status', body: Buffer.from([0x73, 0xff, 0xfe]) },
    ...common(id).slice(1),
    file(),
  ]),
  withParts('an id_gen over 256 bytes', 'text_too_large', (id) => [
    common(id)[0]!,
    { name: 'id_gen', body: 'x'.repeat(257) },
    common(id)[2]!,
    file(),
  ]),
  withParts('a message over 64 KiB', 'text_too_large', (id) => [
    ...common(id),
    { name: 'message', body: 'm'.repeat(64 * 1024 + 1) },
  ]),
  withParts('a part without Content-Disposition', 'malformed_multipart', (id) => [
    ...common(id),
    { name: 'result_pv', body: jpegBytes(100), rawHeaders: ['Content-Type: image/jpeg'] },
  ]),
  {
    why: 'a body cut before its close delimiter',
    code: 'malformed_multipart',
    contentType: MULTIPART_TYPE,
    body: (id) => multipart([...common(id), file()], { close: false }),
  },
  {
    why: 'a body under another boundary',
    code: 'malformed_multipart',
    contentType: 'multipart/form-data; boundary=not-the-one-used',
    body: (id) => multipart([...common(id), file()]),
  },
  {
    why: 'multipart without a boundary parameter',
    code: 'malformed_multipart',
    contentType: 'multipart/form-data',
    body: (id) => multipart([...common(id), file()]),
  },
  {
    why: 'a JSON body',
    code: 'not_multipart',
    contentType: 'application/json',
    body: (id) => Buffer.from(JSON.stringify({ status: 'success', id_gen: id })),
  },
  {
    why: 'a urlencoded form',
    code: 'not_multipart',
    contentType: 'application/x-www-form-urlencoded',
    body: (id) => Buffer.from(`status=success&id_gen=${id}&time_gen=1&message=x`),
  },
  {
    why: 'no Content-Type at all',
    code: 'not_multipart',
    contentType: null,
    body: (id) => multipart([...common(id), file()]),
  },
];
