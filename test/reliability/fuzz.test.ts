/**
 * The CI-sized fuzz runs (the long ones are `npm run soak -- --only fuzz`): valid and mutated
 * bodies against the decoder in process, a long stream for its memory, and bodies over HTTP to
 * `mediahook listen`; see docs/reliability.md.
 */
import { describe, expect, it } from 'vitest';
import { fuzzProblems, runFuzz } from '../support/fuzz/fuzz.ts';
import { httpFuzzProblems, runHttpFuzz } from '../support/fuzz/http-fuzz.ts';
import { streamMemory } from '../support/fuzz/memory.ts';

describe('the decoder under fuzzing', () => {
  it('20,000 mutated and 500 generated bodies: only ProtocolErrors, nothing invalid accepted, busboy agrees', async () => {
    const figures = await runFuzz({ seed: 1, validRuns: 200, mutations: 20_000, propertyRuns: 300 });
    expect(fuzzProblems(figures)).toEqual([]);
    // The mutations reach every kind of refusal, and leave some bodies valid.
    expect(Object.keys(figures.refusedByCode).length).toBeGreaterThanOrEqual(10);
    expect(figures.accepted).toBeGreaterThan(1000);
    expect(figures.bothReadAsCallback).toBeGreaterThan(500);
  }, 180_000);

  it('holds no more memory at the end of a 64 MiB body than at its start', async () => {
    const figures = await streamMemory(64);
    expect(figures.accepted).toBe(true);
    expect(figures.maxGrowthMb).toBeLessThan(32);
  }, 60_000);

  it('500 bodies over HTTP: mediahook listen answers as the decoder decides, and stays up', async () => {
    const figures = await runHttpFuzz({ requests: 500, seed: 3 });
    expect(httpFuzzProblems(figures, 500)).toEqual([]);
    expect(figures.accepted).toBeGreaterThan(50);
  }, 120_000);
});
