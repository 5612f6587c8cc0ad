/**
 * A body cut short must never decode: every prefix of a valid body is rejected, except the one
 * that ends right after the close delimiter (RFC 2046 makes the CRLF after `--b--` optional).
 */
import { describe, expect, it } from 'vitest';
import { contentTypeOf, errorParts, jpegBytes, mp4Bytes, rawBody, successParts } from './bodies.ts';
import { decodeChunks, decodeWhole } from './decode-harness.ts';

const B = 'truncation-boundary';
const CT = contentTypeOf(B);

const bodies = [
  { shape: 'A success JPEG', body: rawBody(B, successParts('A', jpegBytes(200, 31, B))) },
  {
    shape: 'A success MP4',
    body: rawBody(B, successParts('A', mp4Bytes(200, 32, B), { contentType: 'video/mp4' })),
  },
  { shape: 'A error', body: rawBody(B, errorParts('A', 'generation failed')) },
  { shape: 'B success JPEG', body: rawBody(B, successParts('B', jpegBytes(200, 33, B))) },
  { shape: 'B error', body: rawBody(B, errorParts('B', 'image rejected')) },
  {
    shape: 'A error with preamble, padding and epilogue',
    body: rawBody(B, errorParts('A', 'x'), {
      preamble: 'pre',
      delimiterPadding: ' ',
      closePadding: '\t',
      epilogue: 'post',
    }),
  },
];

describe('a valid body truncated at every offset is rejected', () => {
  it.each(bodies)('$shape', async ({ body }) => {
    const full = await decodeWhole(CT, body);
    expect(full.ok).toBe(true);
    const closeEnd = body.lastIndexOf(`--${B}--`) + `--${B}--`.length;
    // Where the body becomes acceptable: after the close delimiter and its optional padding.
    const acceptable = (length: number) =>
      length >= closeEnd && /^[ \t]*(\r\n[\s\S]*)?$/.test(body.subarray(closeEnd, length).toString('latin1'));
    let rejected = 0;
    for (let length = 0; length < body.length; length++) {
      const prefix = body.subarray(0, length);
      const outcome = await decodeWhole(CT, prefix);
      if (acceptable(length)) {
        expect(outcome, `prefix of ${length} bytes`).toEqual(full);
      } else {
        expect(outcome, `prefix of ${length} bytes`).toEqual({ ok: false, code: 'malformed_multipart' });
        rejected++;
      }
    }
    expect(rejected).toBeGreaterThan(closeEnd - 1);
  });

  it('the prefix ending exactly at --b-- is valid, one byte less or one CR more is not', async () => {
    const body = rawBody(B, successParts('B', jpegBytes(200, 34)));
    const atClose = body.subarray(0, body.length - 2);
    expect(atClose.toString('latin1').endsWith(`--${B}--`)).toBe(true);
    expect(await decodeWhole(CT, atClose)).toMatchObject({ ok: true });
    expect(await decodeWhole(CT, body.subarray(0, body.length - 3))).toEqual({
      ok: false,
      code: 'malformed_multipart',
    });
    expect(await decodeWhole(CT, body.subarray(0, body.length - 1))).toEqual({
      ok: false,
      code: 'malformed_multipart',
    });
  });

  it('a truncated body fed in chunks is rejected the same way as whole', async () => {
    const body = rawBody(B, successParts('A', jpegBytes(200, 35, B)));
    for (let length = 0; length < body.length - 2; length += 7) {
      const prefix = body.subarray(0, length);
      const chunks = Array.from({ length: Math.ceil(length / 5) }, (_, i) =>
        prefix.subarray(i * 5, i * 5 + 5),
      );
      expect(await decodeChunks(CT, chunks), `prefix of ${length} bytes`).toEqual({
        ok: false,
        code: 'malformed_multipart',
      });
    }
  });
});
