/**
 * The CI-sized outage run (the long one is `npm run soak -- --only outages`): the service on
 * PostgreSQL while its blob store (PostgreSQL, then S3) is stopped twice and its PostgreSQL
 * connections are cut once; see docs/reliability.md.
 */
import { describe, expect, it } from 'vitest';
import { probePostgres } from '../support/processes.ts';
import { outageProblems, runOutages } from '../support/outages.ts';

process.env['AWS_EC2_METADATA_DISABLED'] = 'true';
const problem = await probePostgres();

describe.skipIf(problem !== undefined && process.env.CI !== 'true')('the service through outages', () => {
  it.each(['postgres', 's3'] as const)(
    'fails no operation and delivers every callback with --blobs %s',
    async (blobs) => {
      if (problem) throw new Error(`PostgreSQL is required when CI=true: ${problem}`);
      const options = { blobs, operations: 20, handIns: 5, outageMs: 2_500, cutMs: 2_000, settleMs: 30_000 };
      const figures = await runOutages(options);
      expect(outageProblems(figures, options.operations + options.handIns)).toEqual([]);
      // The outages met the work: requests were answered 503 and faults were waited out.
      expect(figures.answers['503']).toBeGreaterThan(0);
      // Each of the three outages was watched on /readyz (503 during it, 200 after: see the problems).
      expect(figures.readyz.map((r) => r.outage)).toEqual([
        `blob store (${blobs})`,
        'PostgreSQL',
        `blob store (${blobs})`,
      ]);
    },
    60_000,
  );
});
