/**
 * One suite, run on both stores: SQLite on a temporary file and PostgreSQL in a fresh schema
 * per test. With CI=true an unreachable PostgreSQL fails the run; elsewhere it is skipped, out
 * loud. The cases live in the *-cases.ts modules beside this file.
 */
import { afterEach, beforeEach, describe, it } from 'vitest';
import { type BackendKind, POSTGRES_URL, postgresBackend, probePostgres, sqliteBackend } from './backends.ts';
import { callbackCases } from './callback-cases.ts';
import { manualClock, type SuiteContext } from './helpers.ts';
import { operationCases } from './operation-cases.ts';
import { operatorViewCases } from './operator-view-cases.ts';
import { settleCases } from './settle-cases.ts';
import { textCases } from './text-cases.ts';
import { wakeUpCases } from './wake-up-cases.ts';

const postgresProblem = await probePostgres();
const backends: BackendKind[] = [sqliteBackend];
if (postgresProblem === undefined) backends.push(postgresBackend);
else if (process.env.CI === 'true') {
  describe('PostgreSQL for the store suite', () => {
    it(`is reachable at ${POSTGRES_URL}`, () => {
      throw new Error(`PostgreSQL is required when CI=true: ${postgresProblem}`);
    });
  });
} else {
  console.warn(`store suite: SKIPPING PostgreSQL (${POSTGRES_URL}): ${postgresProblem}`);
  describe.skip('store on postgres (unreachable)', () => {
    it('needs PostgreSQL', () => {});
  });
}

describe.each(backends)('store on $name', (kind) => {
  const t = { kind } as SuiteContext;

  beforeEach(async () => {
    t.backend = await kind.create();
    t.clock = manualClock();
    t.store = t.backend.open({ clock: t.clock.read });
    await t.store.migrate();
  });
  afterEach(async () => {
    await t.backend.dispose();
  });

  operationCases(t);
  callbackCases(t);
  settleCases(t);
  wakeUpCases(t);
  textCases(t);
  operatorViewCases(t);
});
