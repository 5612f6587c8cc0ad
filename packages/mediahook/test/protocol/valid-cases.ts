/**
 * Valid callback bodies: the four shapes and the variants RFC 2046 / RFC 7578 allow, each with
 * the callback it must decode to. Shared by the decoding tests and the busboy comparison.
 */
import {
  CRLF,
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
import { type Decoded, expectedFile, type ValidCase } from './decode-harness.ts';
import { CLIENT_CASES } from './valid-client-cases.ts';

export const B = 'mediahook-test-boundary-7f3a';
const JPEG = jpegBytes(1500, 11, B);
const MP4 = mp4Bytes(1500, 12, B);

const fields = { ...SAMPLE_FIELDS };

function success(
  family: 'A' | 'B',
  content: Buffer,
  mediaType: 'image/jpeg' | 'video/mp4',
  declared: string | null = mediaType,
  filename = 'result.jpg',
): Decoded {
  const part = family === 'A' ? 'result_pv' : 'res_image';
  return {
    event: 'success',
    family,
    ...fields,
    file: expectedFile(part, content, mediaType, declared, filename),
  };
}

function failure(family: 'A' | 'B', message: string): Decoded {
  return { event: 'error', family, ...fields, message };
}

const boundary70 = `${'a'.repeat(30)}0123456789'()+_,-./:=?${'Z'.repeat(17)}q`;
const quotedBoundary = 'simple boundary';
/** A JPEG head, then only bytes that start like a delimiter and are not one. */
const NEAR_MISS_FILE = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff]),
  Buffer.from(`\r\n--${B.slice(0, -1)}\r\r\n-\r\n`),
]);

/** The four text parts plus headers written in unusual letter case. */
const oddCaseParts: RawPart[] = [
  { headers: ['CONTENT-DISPOSITION: form-data; name="status"'], body: fields.status },
  { headers: ['content-disposition: FORM-DATA; NAME="id_gen"'], body: fields.id_gen },
  { headers: ['Content-disposition:form-data;name="time_gen"'], body: fields.time_gen },
  {
    headers: [
      'cOnTeNt-DiSpOsItIoN: form-data; name="result_pv"; FILENAME="result.jpg"',
      'CONTENT-TYPE: image/jpeg',
    ],
    body: JPEG,
  },
];

export const VALID_CASES: ValidCase[] = [
  {
    name: 'A success, JPEG',
    body: rawBody(B, successParts('A', JPEG)),
    expected: success('A', JPEG, 'image/jpeg'),
  },
  {
    name: 'A success, MP4 declared video/mp4',
    body: rawBody(B, successParts('A', MP4, { filename: 'result.mp4', contentType: 'video/mp4' })),
    expected: success('A', MP4, 'video/mp4', 'video/mp4', 'result.mp4'),
  },
  {
    name: 'A success, MP4 declared as a generic type: the bytes decide',
    body: rawBody(B, successParts('A', MP4, { filename: 'r.bin', contentType: 'application/octet-stream' })),
    expected: success('A', MP4, 'video/mp4', 'application/octet-stream', 'r.bin'),
  },
  {
    name: 'A success, file part without Content-Type',
    body: rawBody(B, successParts('A', JPEG, { contentType: null })),
    expected: success('A', JPEG, 'image/jpeg', null),
  },
  {
    name: 'A error',
    body: rawBody(B, errorParts('A', 'the generator ran out of memory')),
    expected: failure('A', 'the generator ran out of memory'),
  },
  {
    name: 'B success, JPEG',
    body: rawBody(B, successParts('B', JPEG)),
    expected: success('B', JPEG, 'image/jpeg'),
  },
  {
    name: 'B error',
    body: rawBody(B, errorParts('B', 'prompt rejected')),
    expected: failure('B', 'prompt rejected'),
  },
  {
    name: 'preamble and epilogue',
    body: rawBody(B, successParts('A', JPEG), {
      preamble: `This is the preamble.${CRLF}It is to be ignored, even --${B}x.`,
      epilogue: `This is the epilogue.${CRLF}--${B}${CRLF}also ignored${CRLF}`,
    }),
    expected: success('A', JPEG, 'image/jpeg'),
  },
  {
    name: 'quoted boundary with a space (the RFC 2046 example)',
    contentType: `multipart/form-data; boundary="${quotedBoundary}"`,
    body: rawBody(quotedBoundary, errorParts('A', 'x')),
    expected: failure('A', 'x'),
  },
  {
    name: 'Content-Type in odd case with white space around the parameter',
    contentType: `Multipart/Form-Data ;  Boundary=${B} ; charset=utf-8`,
    body: rawBody(B, errorParts('B', 'y')),
    expected: failure('B', 'y'),
    werkzeugDiffers:
      'werkzeug compares the media type case-sensitively (RFC 2045: it is not) and reads no part',
  },
  {
    name: 'header names and disposition in any case',
    body: rawBody(B, oddCaseParts),
    expected: success('A', JPEG, 'image/jpeg'),
  },
  {
    name: 'transport padding after every delimiter and after the close delimiter',
    body: rawBody(B, successParts('B', JPEG), { delimiterPadding: '\t \t ', closePadding: ' \t' }),
    expected: success('B', JPEG, 'image/jpeg'),
    busboyDiffers: 'busboy 1 does not skip transport padding after a delimiter and loses every part',
  },
  {
    name: 'parts in reverse order (file first)',
    body: rawBody(B, successParts('A', JPEG).reverse()),
    expected: success('A', JPEG, 'image/jpeg'),
  },
  {
    name: 'error part first',
    body: rawBody(B, [errorParts('B', 'z')[3]!, ...errorParts('B', 'z').slice(0, 3)]),
    expected: failure('B', 'z'),
  },
  {
    name: '70-character boundary',
    contentType: `multipart/form-data; boundary="${boundary70}"`,
    body: rawBody(boundary70, successParts('A', jpegBytes(900, 3, boundary70))),
    expected: success('A', jpegBytes(900, 3, boundary70), 'image/jpeg'),
  },
  {
    name: 'text parts with Content-Type text/plain; charset=utf-8',
    body: rawBody(B, [
      textPart('status', 'success', ['Content-Type: text/plain; charset=utf-8']),
      textPart('id_gen', fields.id_gen, ['Content-Type: text/plain']),
      textPart('time_gen', fields.time_gen, ['Content-Type: TEXT/PLAIN; charset="UTF-8"']),
      textPart('message', 'plain ascii', ['Content-Type: text/plain; charset=us-ascii']),
    ]),
    expected: failure('A', 'plain ascii'),
  },
  {
    name: 'ASCII texts declared ISO-8859-1 (Apache HttpClient) or windows-1252, with a transfer encoding',
    body: rawBody(B, [
      textPart('status', 'success', [
        'Content-Type: text/plain; charset=ISO-8859-1',
        'Content-Transfer-Encoding: 8bit',
      ]),
      textPart('id_gen', fields.id_gen, ['Content-Type: text/plain; charset=windows-1252']),
      textPart('time_gen', fields.time_gen, ['Content-Type: text/plain; charset=latin1']),
      textPart('message', 'plain ascii', ['Content-Type: text/plain; charset=utf8']),
    ]),
    expected: failure('A', 'plain ascii'),
  },
  {
    name: 'charset aliases of the WHATWG label table: US-ASCII, Latin-1 and UTF-8 by other names',
    body: rawBody(B, [
      textPart('status', 'success', ['Content-Type: text/plain; charset=ANSI_X3.4-1968']),
      textPart('id_gen', fields.id_gen, ['Content-Type: text/plain; charset=ISO_8859-1']),
      textPart('time_gen', fields.time_gen, ['Content-Type: text/plain; charset=IBM819']),
      textPart('message', 'ünïcödé', ['Content-Type: text/plain; charset=unicode-1-1-utf-8']),
    ]),
    expected: failure('A', 'ünïcödé'),
    busboyDiffers: 'busboy decodes only the charsets it knows by name and drops the others’ fields',
  },
  {
    name: 'UTF-8 text under charset=utf-8',
    body: rawBody(B, [
      ...errorParts('B', 'x').slice(0, 3),
      textPart('img_message', 'ünïcödé ✓ 漢字 🎞', ['Content-Type: text/plain; charset=utf-8']),
    ]),
    expected: failure('B', 'ünïcödé ✓ 漢字 🎞'),
  },
  {
    name: 'filename* (RFC 8187) alone',
    body: rawBody(B, [
      ...successParts('A', JPEG).slice(0, 3),
      {
        headers: [
          `Content-Disposition: form-data; name="result_pv"; filename*=UTF-8''na%C3%AFve%20r%C3%A9sultat.jpg`,
          'Content-Type: image/jpeg',
        ],
        body: JPEG,
      },
    ]),
    expected: success('A', JPEG, 'image/jpeg', 'image/jpeg', 'naïve résultat.jpg'),
  },
  {
    name: 'filename* takes precedence over filename',
    body: rawBody(B, [
      ...successParts('B', JPEG).slice(0, 3),
      {
        headers: [
          `Content-Disposition: form-data; name="res_image"; filename="fallback.jpg"; filename*=utf-8'en'%E2%82%AC.jpg`,
          'Content-Type: image/jpeg',
        ],
        body: JPEG,
      },
    ]),
    expected: success('B', JPEG, 'image/jpeg', 'image/jpeg', '€.jpg'),
  },
  {
    name: 'filename* in an unknown charset falls back to filename',
    body: rawBody(B, [
      ...successParts('A', JPEG).slice(0, 3),
      {
        headers: [
          `Content-Disposition: form-data; name="result_pv"; filename*=x-unknown''%FF.jpg; filename="plain.jpg"`,
        ],
        body: JPEG,
      },
    ]),
    expected: success('A', JPEG, 'image/jpeg', null, 'plain.jpg'),
    busboyDiffers: 'busboy drops a part whose filename* is in a charset it cannot decode',
  },
  {
    name: 'filename* in an unknown charset alone still makes a file, named by its raw text',
    body: rawBody(B, [
      ...successParts('A', JPEG).slice(0, 3),
      {
        headers: ['Content-Disposition: form-data; name="result_pv"; filename*=x-unknown\'\'r.jpg'],
        body: JPEG,
      },
    ]),
    expected: success('A', JPEG, 'image/jpeg', null, "x-unknown''r.jpg"),
    busboyDiffers: 'busboy drops a part whose filename* is in a charset it cannot decode',
    werkzeugDiffers: 'werkzeug drops an unknown charset and keeps the rest of a filename* as the name',
  },
  {
    name: 'no CRLF after the close delimiter (valid at the end of the body)',
    body: rawBody(B, successParts('A', JPEG), { finalLineBreak: false }),
    expected: success('A', JPEG, 'image/jpeg'),
  },
  {
    name: 'empty texts are texts',
    body: rawBody(B, [
      textPart('status', ''),
      textPart('id_gen', 'i'),
      textPart('time_gen', ''),
      textPart('message', ''),
    ]),
    expected: { event: 'error', family: 'A', status: '', id_gen: 'i', time_gen: '', message: '' },
  },
  {
    name: 'texts holding CRLF, dashes and near-delimiters are kept byte for byte',
    body: rawBody(B, errorParts('A', `line 1${CRLF}--${B.slice(0, -1)}${CRLF}--${CRLF}\r\n-\r`)),
    expected: failure('A', `line 1${CRLF}--${B.slice(0, -1)}${CRLF}--${CRLF}\r\n-\r`),
  },
  {
    name: 'file made only of near-delimiters after its JPEG head',
    body: rawBody(B, successParts('A', NEAR_MISS_FILE)),
    expected: success('A', NEAR_MISS_FILE, 'image/jpeg'),
  },
  {
    name: 'a 3-byte JPEG is enough to sniff',
    body: rawBody(B, successParts('B', Buffer.from([0xff, 0xd8, 0xff]))),
    expected: success('B', Buffer.from([0xff, 0xd8, 0xff]), 'image/jpeg'),
  },
  {
    name: 'folded (obs-fold) Content-Disposition continues the previous header',
    body: rawBody(B, [
      ...errorParts('A', 'folded').slice(0, 3),
      { headers: ['Content-Disposition: form-data;', '\tname="message"'], body: 'folded' },
    ]),
    expected: failure('A', 'folded'),
  },
  {
    name: 'texts and file at their configured limits',
    body: rawBody(B, [
      textPart('status', 's'.repeat(100)),
      textPart('id_gen', 'i'.repeat(40)),
      textPart('time_gen', 't'),
      filePart('result_pv', jpegBytes(500, 4)),
    ]),
    options: { limits: { textBytes: 100, idGenBytes: 40, fileBytes: 500 } },
    expected: {
      event: 'success',
      family: 'A',
      status: 's'.repeat(100),
      id_gen: 'i'.repeat(40),
      time_gen: 't',
      file: expectedFile('result_pv', jpegBytes(500, 4), 'image/jpeg', 'image/jpeg', 'result.jpg'),
    },
  },
  {
    name: 'a receiver limited to family B takes a B callback',
    body: rawBody(B, errorParts('B', 'only B')),
    options: { family: 'B' },
    expected: failure('B', 'only B'),
  },
  {
    name: 'hashing turned off gives a null sha256',
    body: rawBody(B, successParts('A', JPEG)),
    options: { hash: false },
    expected: (() => {
      const decoded = success('A', JPEG, 'image/jpeg');
      if (decoded.event === 'success') decoded.file.sha256 = null;
      return decoded;
    })(),
  },
  ...CLIENT_CASES,
];
