/**
 * The fuzz oracle itself: it must see what it is there to see, or the fuzz runs prove nothing.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { serialize, validCaseArb } from '../support/fuzz/bodies.ts';
import { checkBody, emptyFuzzFigures } from '../support/fuzz/fuzz.ts';
import { agreesWithBusboy, type Decoded, decode, shapeProblem } from '../support/fuzz/oracle.ts';

describe('the fuzz oracle', () => {
  const [sample] = fc.sample(validCaseArb, { seed: 5, numRuns: 1 });

  it('decodes a generated valid body to what it says', async () => {
    const outcome = await decode(sample!.spec.contentType, [serialize(sample!.spec)]);
    expect(outcome.ok).toBe(true);
    expect(
      await checkBody(
        { contentType: sample!.spec.contentType, body: serialize(sample!.spec) },
        emptyFuzzFigures(),
        't',
        1,
        sample!.expected,
      ),
    ).toEqual([]);
  });

  it('reports a body read differently from what was written', async () => {
    const wrong = { ...sample!.expected, status: `${sample!.expected.status}!` };
    const found = await checkBody(
      { contentType: sample!.spec.contentType, body: serialize(sample!.spec) },
      emptyFuzzFigures(),
      't',
      1,
      wrong,
    );
    expect(found.map((f) => f.kind)).toEqual(['valid_misread']);
  });

  it('reports a refused valid body', async () => {
    const found = await checkBody(
      { contentType: 'text/plain', body: serialize(sample!.spec) },
      emptyFuzzFigures(),
      't',
      1,
      sample!.expected,
    );
    expect(found.map((f) => f.kind)).toEqual(['valid_refused']);
  });

  it('knows the four shapes', () => {
    const success: Decoded = {
      family: 'B',
      event: 'success',
      status: 's',
      id_gen: 'i',
      time_gen: 't',
      file: {
        part: 'res_image',
        filename: 'f',
        declaredType: null,
        mediaType: 'video/mp4',
        bytes: 8,
        sha256: null,
        content: Buffer.from('\0\0\0\x18ftyp', 'latin1'),
      },
    };
    expect(shapeProblem(success)).toMatch(/video\/mp4 in family B/);
    expect(shapeProblem({ ...success, family: 'A', file: { ...success.file!, part: 'result_pv' } })).toMatch(
      /sha256/,
    );
    expect(
      shapeProblem({
        family: 'A',
        event: 'error',
        status: 's',
        id_gen: 'x'.repeat(257),
        time_gen: 't',
        message: 'm',
      }),
    ).toMatch(/id_gen/);
  });

  it('tells busboy readings apart', () => {
    const ours: Decoded = {
      family: 'A',
      event: 'error',
      status: 's',
      id_gen: 'i',
      time_gen: 't',
      message: 'm',
    };
    expect(agreesWithBusboy(ours, { ...ours })).toBe(true);
    expect(agreesWithBusboy(ours, { ...ours, message: 'n' })).toBe(false);
  });
});
