/**
 * Valid callback bodies fed whole, byte by byte and in seeded random chunkings must decode to
 * the same, explicitly expected callback every way.
 */
import { describe, expect, it } from 'vitest';
import { contentTypeOf } from './bodies.ts';
import { decodeEveryWay } from './decode-harness.ts';
import { B, VALID_CASES } from './valid-cases.ts';

describe('valid callback bodies decode the same whole, byte by byte and in random chunks', () => {
  it.each(VALID_CASES)('$name', async ({ body, contentType, expected, options }) => {
    const outcome = await decodeEveryWay(contentType ?? contentTypeOf(B), body, options);
    expect(outcome).toEqual({ ok: true, callback: expected });
  });
});
