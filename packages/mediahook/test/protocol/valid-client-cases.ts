/**
 * Valid bodies as the common HTTP clients write them (their boundaries, quoting, extra part
 * headers and Content-Type parameters), and the other RFC 7578 / RFC 9110 variants the decoder
 * must take. Part of {@link VALID_CASES}.
 */
import { jpegBytes, type RawPart, rawBody, SAMPLE_FIELDS, textPart } from './bodies.ts';
import { type Decoded, expectedFile, type ValidCase } from './decode-harness.ts';

const fields = { ...SAMPLE_FIELDS };
const JPEG = jpegBytes(1200, 31, 'okhttp');

function success(
  family: 'A' | 'B',
  declared: string | null,
  filename: string,
  content: Buffer = JPEG,
): Decoded {
  const part = family === 'A' ? 'result_pv' : 'res_image';
  return {
    event: 'success',
    family,
    ...fields,
    file: expectedFile(part, content, 'image/jpeg', declared, filename),
  };
}

/** The three common texts, each with the same extra header lines. */
function commonTexts(headersOf: (value: string) => string[] = () => []): RawPart[] {
  return (['status', 'id_gen', 'time_gen'] as const).map((name) =>
    textPart(name, fields[name], headersOf(fields[name])),
  );
}

const OKHTTP = '3f1c9a0e-5b7d-4e2a-9c61-0d8f2b4a7e15';
const SPRING = 'Xq-7_kLmN0pQrS9tUvW1xYz2AbCdEfGh3iJ';
const GO = '9c3b1f0d5e7a2c4b6d8f0e1a3c5b7d9f1e3a5c7b9d1f3e5a7c9b1d3f5e7a';
const DOTNET = '0b6f8e2a-4c1d-4f7e-a3b5-9d2c6e8f1a4b';
const CURL = '------------------------d74496d66958873e';

export const CLIENT_CASES: ValidCase[] = [
  {
    // OkHttp's MultipartBody writes a Content-Length into every part whose size it knows.
    name: 'OkHttp: a Content-Length in every part',
    contentType: `multipart/form-data; boundary=${OKHTTP}`,
    body: rawBody(OKHTTP, [
      ...commonTexts((value) => [`Content-Length: ${Buffer.byteLength(value)}`]),
      {
        headers: [
          'Content-Disposition: form-data; name="result_pv"; filename="result.jpg"',
          'Content-Type: image/jpeg',
          `Content-Length: ${JPEG.length}`,
        ],
        body: JPEG,
      },
    ]),
    expected: success('A', 'image/jpeg', 'result.jpg'),
  },
  {
    // Spring's FormHttpMessageConverter: no space after ';', texts labelled and sized.
    name: 'Spring: multipart/form-data;boundary=…;charset=UTF-8, texts as text/plain;charset=UTF-8',
    contentType: `multipart/form-data;boundary=${SPRING};charset=UTF-8`,
    body: rawBody(SPRING, [
      ...commonTexts(() => ['Content-Type: text/plain;charset=UTF-8']),
      textPart('img_message', 'quota exceeded', [
        'Content-Type: text/plain;charset=UTF-8',
        'Content-Length: 14',
      ]),
    ]),
    expected: { event: 'error', family: 'B', ...fields, message: 'quota exceeded' },
  },
  {
    // Go's mime/multipart escapes '\' and '"' in names and filenames as quoted pairs.
    name: 'Go: a filename with \\" and \\\\ quoted pairs, application/octet-stream',
    contentType: `multipart/form-data; boundary=${GO}`,
    body: rawBody(GO, [
      ...commonTexts(),
      {
        headers: [
          'Content-Disposition: form-data; name="res_image"; filename="say \\"hi\\" C:\\\\out\\\\r.jpg"',
          'Content-Type: application/octet-stream',
        ],
        body: JPEG,
      },
    ]),
    expected: success('B', 'application/octet-stream', 'say "hi" C:\\out\\r.jpg'),
    busboyDiffers: 'busboy keeps only what follows the last \\ or / of a filename',
  },
  {
    // .NET's MultipartFormDataContent quotes the boundary, leaves tokens unquoted and adds filename*.
    name: '.NET: quoted boundary, unquoted names, filename and filename*',
    contentType: `multipart/form-data; boundary="${DOTNET}"`,
    body: rawBody(DOTNET, [
      ...(['status', 'id_gen', 'time_gen'] as const).map((name) => ({
        headers: ['Content-Type: text/plain; charset=utf-8', `Content-Disposition: form-data; name=${name}`],
        body: fields[name],
      })),
      {
        headers: [
          'Content-Type: image/jpeg',
          "Content-Disposition: form-data; name=result_pv; filename=r.jpg; filename*=utf-8''r%C3%A9sultat.jpg",
        ],
        body: JPEG,
      },
    ]),
    expected: success('A', 'image/jpeg', 'résultat.jpg'),
  },
  {
    // Browsers, undici and requests write '"' as %22 and keep '\'; the name is informative.
    name: 'undici FormData: a filename with %22 and a backslash, kept as written',
    contentType: 'multipart/form-data; boundary=----formdata-undici-067834583778',
    body: rawBody('----formdata-undici-067834583778', [
      ...commonTexts(),
      {
        headers: [
          'Content-Disposition: form-data; name="result_pv"; filename="na%22me\\x.jpg"',
          'Content-Type: image/jpeg',
        ],
        body: JPEG,
      },
    ]),
    expected: success('A', 'image/jpeg', 'na%22me\\x.jpg'),
    busboyDiffers: 'busboy keeps only what follows the last \\ or / of a filename',
    werkzeugDiffers: 'werkzeug turns %22 back into a quote; we keep an informative filename as written',
  },
  {
    // curl -F 'result_pv=@r.jpg;filename=' and requests' ('', data) write filename="": still a file.
    name: 'an empty filename="" still makes the result a file',
    contentType: `multipart/form-data; boundary=${CURL}`,
    body: rawBody(CURL, [
      ...commonTexts(),
      {
        headers: [
          'Content-Disposition: form-data; name="result_pv"; filename=""',
          'Content-Type: image/jpeg',
        ],
        body: JPEG,
      },
    ]),
    expected: success('A', 'image/jpeg', ''),
    busboyDiffers: 'busboy (like Go) reads an empty filename as none, and so the file as a text',
  },
  {
    // RFC 7578 §4.8: headers other than the three a part is read by MUST be ignored.
    name: 'other part headers are ignored, even repeated or folded (Content-ID, X-Trace)',
    contentType: `multipart/form-data; boundary=${CURL}`,
    body: rawBody(CURL, [
      ...commonTexts(() => ['X-Trace: 1', 'x-trace: 2', '\tfolded into the ignored repeat']),
      {
        headers: [
          'Content-Disposition: form-data; name="result_pv"; filename="r.jpg"',
          'Content-ID: <result@example>',
          'Content-ID: <again@example>',
          'Content-Type: image/jpeg',
        ],
        body: JPEG,
      },
    ]),
    expected: success('A', 'image/jpeg', 'r.jpg'),
  },
  {
    // RFC 5322 §2.2: a field name is any printable ASCII but the colon, not only a token.
    name: 'an ignored part header whose name is not an HTTP token (X-Trace[1], X-{id})',
    contentType: `multipart/form-data; boundary=${CURL}`,
    body: rawBody(CURL, [...commonTexts(() => ['X-Trace[1]: a', 'X-{id}@"q": b']), textPart('message', 'm')]),
    expected: { event: 'error', family: 'A', ...fields, message: 'm' },
    busboyDiffers: 'busboy refuses a part header whose name is not an HTTP token',
  },
  {
    // RFC 9110 §5.6.6: parameters = *( OWS ";" OWS [ parameter ] ), so an empty one is allowed.
    name: 'request Content-Type with empty parameters (;;)',
    contentType: `multipart/form-data;; boundary=${CURL} ;; charset=utf-8;`,
    body: rawBody(CURL, [...commonTexts(), textPart('message', 'm')]),
    expected: { event: 'error', family: 'A', ...fields, message: 'm' },
    busboyDiffers: 'busboy (like Go) refuses a Content-Type with an empty parameter',
  },
];
