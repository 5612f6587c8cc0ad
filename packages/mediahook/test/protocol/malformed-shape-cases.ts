/**
 * Callback bodies that are well-formed multipart but break the callback shapes: wrong, missing
 * or repeated parts, wrong media, texts that are not UTF-8, sizes over the limits. Each comes
 * with the stable error code a receiver must answer with.
 */
import type { ProtocolErrorCode } from '../../src/protocol/index.ts';
import {
  errorParts,
  filePart,
  jpegBytes,
  mp4Bytes,
  type RawPart,
  rawBody,
  SAMPLE_FIELDS,
  successParts,
  textPart,
} from './bodies.ts';
import type { HarnessOptions } from './decode-harness.ts';

/** The boundary of every malformed body unless a case says otherwise. */
export const B = 'malformed-test-boundary';
const JPEG = jpegBytes(400, 21, B);
const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.alloc(100, 7),
]);
/** status, id_gen and time_gen of an A error callback. */
export const commonParts = errorParts('A', 'unused').slice(0, 3);

export interface MalformedCase {
  name: string;
  /** The request Content-Type; a body under {@link B} by default. */
  contentType?: string | null;
  body: Buffer;
  code: ProtocolErrorCode;
  options?: HarnessOptions;
}

const withFile = (parts: RawPart[]) => rawBody(B, parts);

export const SHAPE_CASES: MalformedCase[] = [
  // Shape violations.
  {
    name: 'missing part (no time_gen)',
    body: rawBody(
      B,
      errorParts('A', 'm').filter((_, i) => i !== 2),
    ),
    code: 'missing_part',
  },
  { name: 'missing result and error part', body: rawBody(B, commonParts), code: 'missing_part' },
  {
    name: 'empty body with only the close delimiter',
    body: Buffer.from(`--${B}--\r\n`),
    code: 'missing_part',
  },
  {
    name: 'extra part',
    body: rawBody(B, [...errorParts('A', 'm'), textPart('extra', 'x')]),
    code: 'unexpected_part',
  },
  {
    name: 'duplicate part',
    body: rawBody(B, [...errorParts('A', 'm'), textPart('status', 'again')]),
    code: 'duplicate_part',
  },
  {
    name: 'duplicate file part',
    body: withFile([...successParts('A', JPEG), filePart('result_pv', JPEG)]),
    code: 'duplicate_part',
  },
  {
    name: 'misnamed part (Status)',
    body: rawBody(B, [textPart('Status', 'x'), ...errorParts('A', 'm').slice(1)]),
    code: 'unexpected_part',
  },
  {
    name: 'empty field name',
    body: rawBody(B, [...errorParts('A', 'm'), textPart('', 'x')]),
    code: 'unexpected_part',
  },
  {
    name: 'file in an error callback',
    body: withFile([...errorParts('A', 'm'), filePart('result_pv', JPEG)]),
    code: 'unexpected_part',
  },
  {
    name: 'error text in a success callback',
    body: withFile([...successParts('B', JPEG), textPart('img_message', 'm')]),
    code: 'unexpected_part',
  },
  {
    name: 'text where the file belongs',
    body: rawBody(B, [...commonParts, textPart('result_pv', String.fromCharCode(0xff, 0xd8, 0xff))]),
    code: 'expected_file',
  },
  {
    name: 'file where text belongs',
    body: withFile([
      filePart('status', Buffer.from('success'), { filename: 's.txt', contentType: 'text/plain' }),
      ...successParts('A', JPEG).slice(1),
    ]),
    code: 'expected_text',
  },
  {
    name: 'file where text belongs, marked only by a filename* in an unknown charset',
    body: rawBody(B, [
      ...commonParts,
      {
        headers: ['Content-Disposition: form-data; name="message"; filename*=x-unknown\'\'m.txt'],
        body: 'm',
      },
    ]),
    code: 'expected_text',
  },
  {
    name: 'text part declared as a non-text type',
    body: rawBody(B, [...commonParts, textPart('message', 'm', ['Content-Type: application/json'])]),
    code: 'expected_text',
  },
  {
    name: 'family mixing (result_pv with img_message)',
    body: withFile([...successParts('A', JPEG), textPart('img_message', 'm')]),
    code: 'unexpected_part',
  },
  {
    name: 'family mixing (message with img_message)',
    body: rawBody(B, [...errorParts('A', 'm'), textPart('img_message', 'm')]),
    code: 'unexpected_part',
  },
  {
    name: 'family A callback to a family B receiver',
    body: rawBody(B, errorParts('A', 'm')),
    code: 'unexpected_part',
    options: { family: 'B' },
  },
  // Media.
  {
    name: 'B with MP4',
    body: withFile(successParts('B', mp4Bytes(300, 2), { contentType: 'video/mp4' })),
    code: 'media_mismatch',
  },
  {
    name: 'bytes neither JPEG nor MP4 (PNG)',
    body: withFile(successParts('A', PNG, { contentType: 'image/jpeg' })),
    code: 'media_mismatch',
  },
  {
    name: 'JPEG head cut short (FF D8)',
    body: withFile(successParts('A', Buffer.from([0xff, 0xd8]))),
    code: 'media_mismatch',
  },
  { name: 'empty file', body: withFile(successParts('A', Buffer.alloc(0))), code: 'media_mismatch' },
  // Limits.
  {
    name: 'text over 64 KiB',
    body: rawBody(B, errorParts('A', 'x'.repeat(64 * 1024 + 1))),
    code: 'text_too_large',
  },
  {
    name: 'id_gen over 256 bytes',
    body: rawBody(B, errorParts('A', 'm', { ...SAMPLE_FIELDS, id_gen: `${'é'.repeat(128)}x` })),
    code: 'text_too_large',
  },
  {
    name: 'file over a configured limit',
    body: withFile(successParts('A', JPEG)),
    code: 'file_too_large',
    options: { limits: { fileBytes: 399 } },
  },
  {
    // The first violation in byte order wins: the 8 bytes a sniff needs come before the limit.
    name: 'bytes neither JPEG nor MP4, over a limit past the sniff (PNG, 10-byte limit)',
    body: withFile(successParts('A', PNG, { contentType: 'image/jpeg' })),
    code: 'media_mismatch',
    options: { limits: { fileBytes: 10 } },
  },
  {
    name: 'bytes neither JPEG nor MP4, over a limit before the sniff decides (PNG, 7-byte limit)',
    body: withFile(successParts('A', PNG, { contentType: 'image/jpeg' })),
    code: 'file_too_large',
    options: { limits: { fileBytes: 7 } },
  },
  {
    name: 'file over a limit smaller than the sniff',
    body: withFile(successParts('A', JPEG)),
    code: 'file_too_large',
    options: { limits: { fileBytes: 4 } },
  },
  {
    name: 'more parts than a configured limit',
    body: rawBody(B, errorParts('A', 'm')),
    code: 'too_many_parts',
    options: { limits: { parts: 3 } },
  },
  {
    name: 'empty id_gen',
    body: rawBody(B, [
      textPart('status', 'error'),
      textPart('id_gen', ''),
      textPart('time_gen', 't'),
      textPart('message', 'm'),
    ]),
    code: 'invalid_text',
  },
  // Text encoding.
  {
    name: 'invalid UTF-8 in a text part',
    body: rawBody(
      B,
      errorParts('A', 'x')
        .slice(0, 3)
        .concat(textPart('message', Buffer.from([0x61, 0xc3, 0x28]))),
    ),
    code: 'invalid_text',
  },
  {
    name: 'UTF-8 sequence cut at the end of a text',
    body: rawBody(B, [...commonParts, textPart('message', Buffer.from([0xe2, 0x82]))]),
    code: 'invalid_text',
  },
  {
    name: 'text declared in a charset whose ASCII text is other bytes',
    body: rawBody(B, [
      ...commonParts,
      textPart('message', 'm', ['Content-Type: text/plain; charset=utf-16']),
    ]),
    code: 'invalid_text',
  },
  {
    name: 'text declared ISO-2022-JP, whose escapes make ASCII bytes other text',
    body: rawBody(B, [
      ...commonParts,
      textPart('message', 'm', ['Content-Type: text/plain; charset=iso-2022-jp']),
    ]),
    code: 'invalid_text',
  },
  {
    name: 'text declared in a charset no label table knows (UTF-7 reads "+" otherwise)',
    body: rawBody(B, [...commonParts, textPart('message', 'm', ['Content-Type: text/plain; charset=utf-7'])]),
    code: 'invalid_text',
  },
  {
    name: 'bytes beyond ASCII in a text declared iso-8859-1 (read differently by different parsers)',
    body: rawBody(B, [
      ...commonParts,
      textPart('message', Buffer.from('caf\xe9', 'latin1'), ['Content-Type: text/plain; charset=iso-8859-1']),
    ]),
    code: 'invalid_text',
  },
  {
    name: 'non-ASCII bytes in a text declared charset=us-ascii',
    body: rawBody(B, [
      ...commonParts,
      textPart('message', 'naïve', ['Content-Type: text/plain; charset=US-ASCII']),
    ]),
    code: 'invalid_text',
  },
];
