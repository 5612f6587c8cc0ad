/**
 * Properties of the encoder and decoder together: whatever callback is encoded decodes back to
 * itself under any chunking, encoding is a pure function of callback and boundary, and the
 * announced Content-Length is the body's length.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeCallback, type OutgoingCallback, randomBoundary } from '../../src/protocol/index.ts';
import { sha256Hex } from './bodies.ts';
import { type Decoded, decodeChunks } from './decode-harness.ts';

const BOUNDARY = 'property-boundary-5c1d';

const JPEG_HEAD = Uint8Array.from([0xff, 0xd8, 0xff, 0xdb]);
const MP4_HEAD = Uint8Array.from([0, 0, 0, 0x14, 0x66, 0x74, 0x79, 0x70, 0x6d, 0x70, 0x34, 0x32]);

/** Text with the pieces that trouble multipart parsers mixed into arbitrary Unicode. */
const trickyText = fc
  .array(
    fc.oneof(
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc.string({ unit: 'grapheme', maxLength: 6 }),
      fc.constantFrom(
        '\r\n',
        '\r',
        '\n',
        '--',
        '\r\n--',
        `\r\n--${BOUNDARY.slice(0, -1)}`,
        '"',
        '\\',
        ';',
        '\0',
        '\uFEFF',
      ),
    ),
    { maxLength: 16 },
  )
  .map((pieces) => pieces.join(''))
  // The encoder refuses a text holding the delimiter, by design.
  .filter((text) => !text.includes(`--${BOUNDARY}`));

/**
 * Filenames with the characters the WHATWG escaping is for (quote, CR, LF) mixed in. Other
 * control characters are left out because a strict decoder refuses them in a header, and the
 * backslash because it reads as an RFC quoted-pair (the encoder does not escape either).
 */
const filename = fc
  .array(
    fc.oneof(
      fc.string({ unit: 'binary', maxLength: 10 }),
      fc.constantFrom('"', '\r', '\n', '\r\n', ';', '=', '%22', ' '),
    ),
    {
      minLength: 1,
      maxLength: 6,
    },
  )
  .map((pieces) => pieces.join(''))
  .filter((name) => name.length > 0 && !/[\0-\x08\x0b\x0c\x0e-\x1f\x7f\\]/.test(name));

const fields = {
  status: trickyText,
  id_gen: trickyText.filter((id) => id !== '' && Buffer.byteLength(id) <= 256),
  time_gen: trickyText,
};

const outgoing: fc.Arbitrary<OutgoingCallback> = fc.oneof(
  fc.record({
    family: fc.constantFrom('A' as const, 'B' as const),
    event: fc.constant('error' as const),
    ...fields,
    message: trickyText,
  }),
  fc
    .record({
      family: fc.constantFrom('A' as const, 'B' as const),
      mp4: fc.boolean(),
      ...fields,
      tail: fc.uint8Array({ maxLength: 3000 }),
      filename,
    })
    .map(({ family, mp4, tail, ...rest }) => {
      const video = family === 'A' && mp4;
      const head = video ? MP4_HEAD : JPEG_HEAD;
      return {
        ...rest,
        family,
        event: 'success' as const,
        mediaType: video ? ('video/mp4' as const) : ('image/jpeg' as const),
        file: Buffer.concat([head, tail]),
      };
    }),
);

/** Chunk sizes, used in turn until the body is cut up. */
const chunking = fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 20 });

function cut(body: Buffer, sizes: number[]): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0, i = 0; at < body.length; i++) {
    const size = sizes[i % sizes.length]!;
    chunks.push(body.subarray(at, at + size));
    at += size;
  }
  return chunks;
}

async function bodyOf(
  callback: OutgoingCallback,
  boundary = BOUNDARY,
): Promise<{ body: Buffer; contentType: string; contentLength: number }> {
  const encoded = await encodeCallback(callback, boundary);
  const chunks: Buffer[] = [];
  for await (const chunk of encoded.body()) chunks.push(chunk);
  return {
    body: Buffer.concat(chunks),
    contentType: encoded.contentType,
    contentLength: encoded.contentLength,
  };
}

/** The escaping the encoder applies to a filename: WHATWG's (CR, LF, quote), and a tab. */
const escaped = (name: string) =>
  name.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22').replace(/\t/g, '%09');

function expectedDecoding(callback: OutgoingCallback): Decoded {
  const common = {
    family: callback.family,
    status: callback.status,
    id_gen: callback.id_gen,
    time_gen: callback.time_gen,
  };
  if (callback.event === 'error') return { event: 'error', ...common, message: callback.message };
  const bytes = Buffer.from(callback.file as Uint8Array);
  return {
    event: 'success',
    ...common,
    file: {
      part: callback.family === 'A' ? 'result_pv' : 'res_image',
      filename: escaped(callback.filename!),
      declaredType: callback.mediaType,
      mediaType: callback.mediaType,
      bytes: bytes.length,
      sha256: sha256Hex(bytes),
      content: bytes.toString('hex'),
    },
  };
}

describe('encode → decode round trip', () => {
  it('decode(encode(x)) == x for any texts, file bytes and chunking', async () => {
    await fc.assert(
      fc.asyncProperty(outgoing, chunking, async (callback, sizes) => {
        const { body, contentType } = await bodyOf(callback);
        const outcome = await decodeChunks(contentType, cut(body, sizes));
        expect(outcome).toEqual({ ok: true, callback: expectedDecoding(callback) });
      }),
      { numRuns: 300 },
    );
  });

  it('the default filename is <id_gen>.jpg or <id_gen>.mp4', async () => {
    for (const [mediaType, head, extension] of [
      ['image/jpeg', JPEG_HEAD, '.jpg'],
      ['video/mp4', MP4_HEAD, '.mp4'],
    ] as const) {
      const callback: OutgoingCallback = {
        family: 'A',
        event: 'success',
        status: 'success',
        id_gen: '0192f0e4-7c3a-7b1e-9d2f-5a6b7c8d9e0f',
        time_gen: '2026-11-22T10:00:00.123Z',
        file: head,
        mediaType,
      };
      const { body, contentType } = await bodyOf(callback);
      const outcome = await decodeChunks(contentType, [body]);
      expect(outcome).toMatchObject({
        ok: true,
        callback: { file: { filename: `${callback.id_gen}${extension}`, mediaType } },
      });
    }
  });
});

describe('encoding', () => {
  it('makes a fresh random boundary for every callback', () => {
    // More than one refill of the pool the random bytes come from.
    const boundaries = Array.from({ length: 1_000 }, () => randomBoundary());
    for (const boundary of boundaries) expect(boundary).toMatch(/^mediahook-[0-9a-f]{32}$/);
    expect(new Set(boundaries).size).toBe(boundaries.length);
  });

  it('is deterministic for a given boundary', async () => {
    await fc.assert(
      fc.asyncProperty(outgoing, async (callback) => {
        const first = await bodyOf(callback);
        const second = await bodyOf(callback);
        expect(second.body.equals(first.body)).toBe(true);
        expect(second.contentType).toBe(first.contentType);
      }),
      { numRuns: 100 },
    );
  });

  it('hands over an in-memory body as the very bytes it streams, and none for a file path', async () => {
    await fc.assert(
      fc.asyncProperty(outgoing, async (callback) => {
        const encoded = await encodeCallback(callback, 'in-memory-boundary');
        const streamed: Buffer[] = [];
        for await (const chunk of encoded.body()) streamed.push(chunk);
        expect(Buffer.concat([...(encoded.inMemory() ?? [])]).equals(Buffer.concat(streamed))).toBe(true);
      }),
      { numRuns: 100 },
    );
    const dir = mkdtempSync(join(tmpdir(), 'mediahook-encode-'));
    try {
      const file = join(dir, 'result.jpg');
      writeFileSync(file, Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]));
      const fromPath = await encodeCallback({
        family: 'A',
        event: 'success',
        status: 'success',
        id_gen: 'op-1',
        time_gen: '2025-01-01T00:00:00.000Z',
        file,
        mediaType: 'image/jpeg',
      });
      expect(fromPath.inMemory()).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('announces a Content-Length equal to the body length', async () => {
    await fc.assert(
      fc.asyncProperty(outgoing, async (callback) => {
        const { body, contentLength } = await bodyOf(callback);
        expect(contentLength).toBe(body.length);
      }),
      { numRuns: 100 },
    );
  });

  it('round-trips under any boundary made of characters both RFC 2046 and RFC 9110 tokens allow', async () => {
    await fc.assert(
      fc.asyncProperty(
        outgoing,
        fc.stringMatching(/^[0-9A-Za-z'+_\-.]{1,70}$/),
        async (callback, boundary) => {
          const texts = [callback.status, callback.id_gen, callback.time_gen];
          if (callback.event === 'error') texts.push(callback.message);
          fc.pre(!texts.some((text) => text.includes(`--${boundary}`)));
          if (callback.event === 'success') {
            // A file that happens to hold the delimiter cannot be framed with this boundary.
            fc.pre(!Buffer.from(callback.file as Uint8Array).includes(`\r\n--${boundary}`));
          }
          const { body, contentType } = await bodyOf(callback, boundary);
          expect(contentType).toBe(`multipart/form-data; boundary=${boundary}`);
          expect(await decodeChunks(contentType, [body])).toEqual({
            ok: true,
            callback: expectedDecoding(callback),
          });
        },
      ),
      { numRuns: 150 },
    );
  });

  it('quotes a boundary that is not a token, and it still round-trips', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.stringMatching(/^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/),
        async (boundary) => {
          const callback: OutgoingCallback = {
            family: 'B',
            event: 'error',
            status: 'error',
            id_gen: 'op-1',
            time_gen: 't',
            message: 'no GPU',
          };
          const { body, contentType } = await bodyOf(callback, boundary);
          const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(boundary);
          expect(contentType).toBe(`multipart/form-data; boundary=${token ? boundary : `"${boundary}"`}`);
          expect(await decodeChunks(contentType, [body])).toEqual({
            ok: true,
            callback: expectedDecoding(callback),
          });
        },
      ),
      { numRuns: 150 },
    );
  });

  it('escapes control characters of a filename, so its own body always decodes', async () => {
    const callback: OutgoingCallback = {
      family: 'A',
      event: 'success',
      status: 'success',
      id_gen: 'op\u0001\u007f"\r\n\\x',
      time_gen: 't',
      file: JPEG_HEAD,
      mediaType: 'image/jpeg',
    };
    const { body, contentType } = await bodyOf(callback);
    const decoded = await decodeChunks(contentType, [body]);
    expect(decoded.ok && decoded.callback.event === 'success' && decoded.callback.file.filename).toBe(
      'op%01%7F%22%0D%0A\\x.jpg',
    );
  });

  it('refuses a text with an unpaired surrogate instead of sending it changed', async () => {
    await expect(
      encodeCallback({
        family: 'A',
        event: 'error',
        status: 'e',
        id_gen: 'x',
        time_gen: 't',
        message: 'a\ud800b',
      }),
    ).rejects.toThrow(/unpaired surrogate/);
  });

  it('refuses an empty id_gen, which a receiver could not tell from another', async () => {
    await expect(
      encodeCallback({ family: 'B', event: 'error', status: 'e', id_gen: '', time_gen: 't', message: 'm' }),
    ).rejects.toThrow(/id_gen must not be empty/);
  });
});
