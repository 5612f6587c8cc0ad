/**
 * Random valid callbacks for the differential tests: as the encoder sends them, and built by
 * hand with shuffled parts, preambles and epilogues. Seeded, so a failure names its body.
 */
import type { OutgoingCallback } from '../../src/protocol/index.ts';
import {
  contentTypeOf,
  filePart,
  jpegBytes,
  mp4Bytes,
  type RawPart,
  rawBody,
  seededRandom,
  textPart,
} from './bodies.ts';

/** Pieces that stress a parser: CRLF, dashes, quotes, separators and multi-byte UTF-8. */
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
export function randomOutgoing(seed: number): OutgoingCallback {
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

/** A valid callback built part by part: shuffled order, an optional preamble and epilogue. */
export function handBuiltBody(seed: number): { contentType: string; body: Buffer } {
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
  return { contentType: contentTypeOf(boundary), body };
}

export async function bytesOf(body: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}
