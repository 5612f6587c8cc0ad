/**
 * The CI-sized crash runs (the long ones are `npm run soak -- --only crash`): the service
 * processes are SIGKILLed and restarted while operations come in, and no callback is lost or
 * handled twice; see docs/reliability.md. PostgreSQL is not restarted here: other tests use it.
 */
import { describe, expect, it } from 'vitest';
import { type CrashOptions, crashProblems, runCrash } from '../support/crash.ts';
import { POSTGRES_URL, probePostgres } from '../support/processes.ts';

const problem = await probePostgres();
if (problem && process.env.CI !== 'true') {
  console.warn(`crash suite: SKIPPING PostgreSQL (${POSTGRES_URL}): ${problem}`);
}

const base = { operations: 100, kills: 2, imageEvery: 10, durationMs: 12_000, settleMs: 90_000 };

describe('SIGKILL of the service while operations come in', () => {
  it('on SQLite (serve): every callback arrives, each id_gen is handled once', async () => {
    const options: CrashOptions = { ...base, backend: 'sqlite', seed: 11 };
    const figures = await runCrash(options);
    expect(crashProblems(figures, options)).toEqual([]);
    expect(figures.handledOnce).toBe(100);
    expect(figures.successOperations).toBe(10);
  }, 240_000);

  it.skipIf(problem !== undefined && process.env.CI !== 'true')(
    'on PostgreSQL (serve --no-worker and two workers): every callback arrives, each id_gen is handled once',
    async () => {
      if (problem) throw new Error(`PostgreSQL is required when CI=true: ${problem}`);
      const options: CrashOptions = { ...base, backend: 'postgres', seed: 12 };
      const figures = await runCrash(options);
      expect(crashProblems(figures, options)).toEqual([]);
      expect(figures.handledOnce).toBe(100);
    },
    240_000,
  );
});
