/**
 * Our decoder and two widely used parsers (busboy, @fastify/busboy) must read valid callbacks
 * identically: same text fields, same file bytes, same filename and declared type.
 */
import { describe, expect, it } from 'vitest';
import { encodeCallback, type OutgoingCallback } from '../../src/protocol/index.ts';
import {
  contentTypeOf,
  filePart,
  jpegBytes,
  mp4Bytes,
  type RawPart,
  randomChunks,
  rawBody,
  seededRandom,
  textPart,
} from './bodies.ts';
import { decodeWhole } from './decode-harness.ts';
import { type FormView, parseWithBusboy, parseWithFastifyBusboy, viewOf } from './reference-parsers.ts';
import { B, VALID_CASES } from './valid-cases.ts';

async function ourView(contentType: string, body: Buffer): Promise<FormView> {
  const outcome = await decodeWhole(contentType, body);
  if (!outcome.ok) throw new Error(`our decoder rejected a valid body: ${outcome.code}`);
  return viewOf(outcome.callback);
}

/** Parsers default a missing part Content-Type differently; only a declared one is compared. */
function withoutUndeclaredTypes(reference: FormView, ours: FormView): FormView {
  const files = Object.fromEntries(
    Object.entries(reference.files).map(([name, file]) => [
      name,
      ours.files[name]?.mimeType === null ? { ...file, mimeType: null } : file,
    ]),
  );
  return { ...reference, files };
}

describe('busboy reads the valid table as we do', () => {
  const comparable = VALID_CASES.filter((c) => !c.busboyDiffers);
  it.each(comparable)('$name', async ({ body, contentType }) => {
    const ct = contentType ?? contentTypeOf(B);
    const ours = await ourView(ct, body);
    const theirs = await parseWithBusboy(ct, randomChunks(body, 5, 100));
    expect(withoutUndeclaredTypes(theirs, ours)).toEqual(ours);
  });
});

const ALPHABET = [
  'a',
  'Z',
  '0',
  ' ',
  '-',
  '\r',
  '\n',
  '\r\n',
  '--',
  'é',
  '€',
  '漢',
  '🎞',
  '"',
  ';',
  '=',
  '\t',
];

function randomText(random: () => number, maxPieces: number): string {
  const pieces = Math.floor(random() * maxPieces);
  let text = '';
  for (let i = 0; i < pieces; i++) text += ALPHABET[Math.floor(random() * ALPHABET.length)];
  return text;
}

/** A random valid callback as the encoder would send it. */
function randomOutgoing(seed: number): OutgoingCallback {
  const random = seededRandom(seed);
  const family = random() < 0.5 ? 'A' : 'B';
  const base = {
    family,
    status: randomText(random, 12),
    id_gen: `op-${randomText(random, 30)}`,
    time_gen: randomText(random, 30),
  } as const;
  if (random() < 0.3) return { ...base, event: 'error', message: randomText(random, 200) };
  const mp4 = family === 'A' && random() < 0.5;
  const size = 1 + Math.floor(random() * 5000);
  return {
    ...base,
    event: 'success',
    mediaType: mp4 ? 'video/mp4' : 'image/jpeg',
    file: mp4 ? mp4Bytes(size, seed, 'gen-boundary') : jpegBytes(size, seed, 'gen-boundary'),
    filename: `result-${seed}${mp4 ? '.mp4' : '.jpg'}`,
  };
}

async function bytesOf(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe('generated callbacks read the same by us, busboy and @fastify/busboy', () => {
  it('60 encoded callbacks', async () => {
    for (let seed = 1; seed <= 60; seed++) {
      const encoded = await encodeCallback(randomOutgoing(seed), `gen-boundary-${seed}`);
      const body = await bytesOf(encoded.body());
      const ours = await ourView(encoded.contentType, body);
      const chunks = randomChunks(body, seed, 64);
      expect(await parseWithBusboy(encoded.contentType, chunks), `seed ${seed}`).toEqual(ours);
      expect(await parseWithFastifyBusboy(encoded.contentType, chunks), `seed ${seed}`).toEqual(ours);
    }
  });

  it('60 hand-built bodies with shuffled parts, preambles and epilogues', async () => {
    for (let seed = 1; seed <= 60; seed++) {
      const random = seededRandom(seed * 31);
      const boundary = `hand-${seed}-${'x'.repeat(Math.floor(random() * 40))}`;
      const family = random() < 0.5 ? 'A' : 'B';
      const parts: RawPart[] = [
        textPart('status', randomText(random, 10)),
        textPart('id_gen', `op-${randomText(random, 20)}`),
        textPart('time_gen', randomText(random, 20)),
        random() < 0.5
          ? textPart(family === 'A' ? 'message' : 'img_message', randomText(random, 100))
          : filePart(
              family === 'A' ? 'result_pv' : 'res_image',
              jpegBytes(1 + Math.floor(random() * 3000), seed, boundary),
            ),
      ];
      parts.sort(() => random() - 0.5);
      const body = rawBody(boundary, parts, {
        preamble: random() < 0.5 ? randomText(random, 20).replaceAll('-', '_') : undefined,
        epilogue: random() < 0.5 ? randomText(random, 20) : undefined,
      });
      const ct = contentTypeOf(boundary);
      const ours = await ourView(ct, body);
      expect(await parseWithBusboy(ct, randomChunks(body, seed, 50)), `seed ${seed}`).toEqual(ours);
    }
  });
});
