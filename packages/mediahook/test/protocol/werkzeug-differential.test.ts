/**
 * werkzeug, the parser under Flask (a common way to write a receiver in Python), must read our
 * valid table and the encoder's output as our decoder does. Skipped, with a message, where
 * python3 with werkzeug is not installed.
 */
import { describe, expect, it } from 'vitest';
import { encodeCallback } from '../../src/protocol/index.ts';
import { contentTypeOf } from './bodies.ts';
import { bytesOf, handBuiltBody, randomOutgoing } from './generated-bodies.ts';
import {
  type FormView,
  ourView,
  parseWithWerkzeug,
  werkzeugAvailable,
  withoutUndeclaredTypes,
} from './reference-parsers.ts';
import { B, VALID_CASES } from './valid-cases.ts';

const available = werkzeugAvailable();
if (!available) console.warn('werkzeug-differential: SKIPPING (python3 with werkzeug is not installed)');

/** Reads every body with werkzeug at once and compares each reading with ours. */
async function expectSameReadings(
  bodies: { label: string; contentType: string; body: Buffer }[],
): Promise<void> {
  const readings = parseWithWerkzeug(bodies);
  for (const [i, { label, contentType, body }] of bodies.entries()) {
    const ours = await ourView(contentType, body);
    const reading = readings[i]!;
    expect(reading, label).toMatchObject({ ok: true });
    const theirs = (reading as { view: FormView }).view;
    expect(withoutUndeclaredTypes(theirs, ours), label).toEqual(ours);
  }
}

describe.skipIf(!available)('werkzeug reads valid callbacks as we do', () => {
  it('the valid table', async () => {
    const comparable = VALID_CASES.filter((c) => !c.werkzeugDiffers);
    await expectSameReadings(
      comparable.map((c) => ({
        label: c.name,
        contentType: c.contentType ?? contentTypeOf(B),
        body: c.body,
      })),
    );
  });

  it('60 encoded callbacks and 60 hand-built bodies', async () => {
    const bodies = [];
    for (let seed = 1; seed <= 60; seed++) {
      const encoded = await encodeCallback(randomOutgoing(seed), `gen-boundary-${seed}`);
      bodies.push({
        label: `encoded, seed ${seed}`,
        contentType: encoded.contentType,
        body: await bytesOf(encoded.body()),
      });
      bodies.push({ label: `hand-built, seed ${seed}`, ...handBuiltBody(seed) });
    }
    await expectSameReadings(bodies);
  });
});
