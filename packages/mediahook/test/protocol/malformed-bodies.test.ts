/**
 * Malformed callback bodies fed whole, byte by byte and in seeded random chunkings must be
 * rejected with the same stable error code every way.
 */
import { describe, expect, it } from 'vitest';
import { contentTypeOf } from './bodies.ts';
import { decodeEveryWay } from './decode-harness.ts';
import { FRAMING_CASES } from './malformed-framing-cases.ts';
import { PARAMETER_CASES } from './malformed-parameter-cases.ts';
import { B, SHAPE_CASES } from './malformed-shape-cases.ts';

const MALFORMED_CASES = [...SHAPE_CASES, ...FRAMING_CASES, ...PARAMETER_CASES];

describe('malformed callback bodies are rejected with a stable code, however they are fed', () => {
  it.each(MALFORMED_CASES)('$name → $code', async ({ body, contentType, code, options }) => {
    const outcome = await decodeEveryWay(
      contentType === undefined ? contentTypeOf(B) : contentType,
      body,
      options,
    );
    expect(outcome).toEqual({ ok: false, code });
  });
});
