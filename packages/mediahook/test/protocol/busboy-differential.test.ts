/**
 * Our decoder and two widely used parsers (busboy, @fastify/busboy) must read valid callbacks
 * identically: same text fields, same file bytes, same filename and declared type.
 */
import { describe, expect, it } from 'vitest';
import { encodeCallback } from '../../src/protocol/index.ts';
import { contentTypeOf, randomChunks } from './bodies.ts';
import { bytesOf, handBuiltBody, randomOutgoing } from './generated-bodies.ts';
import {
  ourView,
  parseWithBusboy,
  parseWithFastifyBusboy,
  withoutUndeclaredTypes,
} from './reference-parsers.ts';
import { B, VALID_CASES } from './valid-cases.ts';

describe('busboy reads the valid table as we do', () => {
  const comparable = VALID_CASES.filter((c) => !c.busboyDiffers);
  it.each(comparable)('$name', async ({ body, contentType }) => {
    const ct = contentType ?? contentTypeOf(B);
    const ours = await ourView(ct, body);
    const theirs = await parseWithBusboy(ct, randomChunks(body, 5, 100));
    expect(withoutUndeclaredTypes(theirs, ours)).toEqual(ours);
  });
});

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
      const { contentType, body } = handBuiltBody(seed);
      const ours = await ourView(contentType, body);
      expect(await parseWithBusboy(contentType, randomChunks(body, seed, 50)), `seed ${seed}`).toEqual(ours);
    }
  });
});
