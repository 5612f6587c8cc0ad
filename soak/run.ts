/**
 * `npm run soak`: the long form of the reliability suites (crash, chaos, fuzz, abuse), with
 * their figures printed and written to soak/results.json. The CI-sized forms of the same
 * suites run inside `npm test` (test/reliability/).
 *
 *   npm run soak                          every suite, long form
 *   npm run soak -- --only fuzz,chaos     some suites
 *   npm run soak -- --scale 0.1           every count scaled down (a quick look)
 *
 * Exit status 0 when every promise held, 1 when a suite found a problem.
 */
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { runAbuse } from '../test/support/abuse/abuse.ts';
import { chaosProblems, runChaos } from '../test/support/chaos.ts';
import { type CrashOptions, crashProblems, runCrash } from '../test/support/crash.ts';
import { fuzzProblems } from '../test/support/fuzz/fuzz.ts';
import { httpFuzzProblems, runHttpFuzz } from '../test/support/fuzz/http-fuzz.ts';
import { runLongFuzz } from './fuzz/long-fuzz.ts';
import { streamMemory } from '../test/support/fuzz/memory.ts';
import { killAll, probePostgres } from '../test/support/processes.ts';
import { startPrivatePostgres } from './lib/private-postgres.ts';

const SUITES = ['crash', 'chaos', 'fuzz', 'abuse'] as const;
type Suite = (typeof SUITES)[number];

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    scale: { type: 'string' },
    seed: { type: 'string' },
    out: { type: 'string' },
    // `shared`: restart the shared test server (pg_ctlcluster) instead of a private one.
    postgres: { type: 'string' },
  },
});
const only = (values.only?.split(',') ?? SUITES) as Suite[];
for (const name of only)
  if (!SUITES.includes(name)) throw new Error(`unknown suite ${name}; choose from ${SUITES.join(', ')}`);
const scale = Number(values.scale ?? 1);
const seed = Number(values.seed ?? 20261122);
const n = (count: number) => Math.max(1, Math.round(count * scale));

interface Result {
  suite: string;
  problems: string[];
  figures: unknown;
}
const results: Result[] = [];
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

async function step(
  suite: string,
  run: () => Promise<{ problems: string[]; figures: unknown }>,
): Promise<void> {
  log(`${suite}: starting`);
  try {
    const { problems, figures } = await run();
    results.push({ suite, problems, figures });
    log(`${suite}: ${problems.length === 0 ? 'held' : `${problems.length} problems`}`);
    for (const problem of problems) log(`  ✗ ${problem}`);
  } catch (error) {
    results.push({
      suite,
      problems: [`the run failed: ${(error as Error).stack ?? String(error)}`],
      figures: null,
    });
    log(`${suite}: failed to run: ${(error as Error).message}`);
  }
}

/** Runs on any exit, even an interrupted one: the private PostgreSQL is a daemon of its own. */
const atExit: (() => void)[] = [];
process.on('exit', () => {
  killAll();
  for (const cleanup of atExit.splice(0)) cleanup();
});
process.on('SIGINT', () => process.exit(130));

const started = Date.now();
if (only.includes('crash')) {
  const base = {
    operations: n(2000),
    kills: Math.min(10, n(10)),
    imageEvery: 20,
    seed,
    durationMs: n(120_000),
    settleMs: 600_000,
    log,
  };
  const sqlite: CrashOptions = { ...base, backend: 'sqlite' };
  await step('crash (SQLite)', async () => {
    const figures = await runCrash(sqlite);
    return { figures, problems: crashProblems(figures, sqlite) };
  });
  // A server of its own by default: restarting the shared one would fail other tests using it.
  const shared = values.postgres === 'shared';
  const server = shared ? null : await startPrivatePostgres().catch((error: Error) => error);
  if (server && !(server instanceof Error)) atExit.push(() => server.stop());
  const problem = server instanceof Error ? server.message : await probePostgres(server?.url);
  if (problem) {
    results.push({
      suite: 'crash (PostgreSQL)',
      problems: [`PostgreSQL is unavailable: ${problem}`],
      figures: null,
    });
  } else {
    const postgres: CrashOptions = {
      ...base,
      backend: 'postgres',
      postgresRestarts: 2,
      seed: seed + 1,
      postgres: server instanceof Error || server === null ? undefined : server,
    };
    await step(`crash (PostgreSQL, ${shared ? 'shared' : 'private'} server restarted twice)`, async () => {
      const figures = await runCrash(postgres);
      return { figures, problems: crashProblems(figures, postgres) };
    });
  }
  for (const cleanup of atExit.splice(0)) cleanup();
}
if (only.includes('chaos')) {
  await step('chaos receiver', async () => {
    const figures = await runChaos({ callbacks: n(2000), largeEvery: 25, seed, settleMs: 900_000 });
    return { figures, problems: chaosProblems(figures) };
  });
}
if (only.includes('fuzz')) {
  await step('fuzz (decoder, in process)', async () => {
    const figures = await runLongFuzz({
      bodies: n(1_000_000),
      shards: Math.max(1, cpus().length),
      seed,
      log,
    });
    const problems = fuzzProblems(figures);
    if (figures.bodies < n(1_000_000)) problems.push(`only ${figures.bodies} bodies were checked`);
    return { figures, problems };
  });
  await step('fuzz (memory while streaming)', async () => {
    const figures = await streamMemory(Math.max(64, n(1024)));
    const problems = figures.accepted ? [] : ['the streamed callback was not decoded whole'];
    if (figures.maxGrowthMb > 32) problems.push(`the decoder's memory grew by ${figures.maxGrowthMb} MiB`);
    return { figures, problems };
  });
  await step('fuzz (over HTTP to mediahook listen)', async () => {
    const figures = await runHttpFuzz({ requests: n(10_000), seed });
    return { figures, problems: httpFuzzProblems(figures, n(10_000)) };
  });
}
if (only.includes('abuse')) {
  await step('abuse of mediahook listen', async () => {
    const figures = await runAbuse({
      slowlorisConnections: n(1000),
      slowlorisMs: n(60_000),
      validDuringSlowloris: n(120),
    });
    return { figures, problems: figures.failures };
  });
}

const report = {
  date: new Date().toISOString(),
  node: process.version,
  cores: cpus().length,
  scale,
  seed,
  minutes: Math.round((Date.now() - started) / 6000) / 10,
  held: results.every((r) => r.problems.length === 0),
  results,
};
const out = values.out ?? new URL('./results.json', import.meta.url).pathname;
await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
log(`figures written to ${out}`);
for (const r of results) process.stdout.write(`${r.problems.length === 0 ? 'held ' : 'FAIL '} ${r.suite}\n`);
process.exitCode = report.held ? 0 : 1;
