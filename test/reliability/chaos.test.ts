/**
 * The CI-sized chaos run (the long one is `npm run soak -- --only chaos`): the delivery worker
 * against a receiver that fails in every way; see docs/reliability.md.
 */
import { describe, expect, it } from 'vitest';
import { BEHAVIOURS } from '../support/chaos-receiver.ts';
import { chaosProblems, runChaos } from '../support/chaos.ts';

describe('delivery against a chaotic receiver', () => {
  it('ends every callback delivered, gone or rightly dead, records every attempt, leaks nothing', async () => {
    const figures = await runChaos({ callbacks: 120, largeEvery: 12, seed: 7, settleMs: 120_000 });
    expect(chaosProblems(figures)).toEqual([]);
    // The run exercised what it claims to: every misbehaviour, and each kind of final state.
    expect(Object.keys(figures.behaviours).sort()).toEqual([...BEHAVIOURS].sort());
    expect(Object.keys(figures.finalStates).sort()).toEqual(['dead', 'delivered', 'gone']);
    expect(figures.attemptErrors.upload_stalled).toBeGreaterThan(0);
    expect(figures.attemptsRecorded).toBeGreaterThan(figures.callbacks);
  }, 180_000);
});
