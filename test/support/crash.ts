/**
 * Crash: operations are submitted to `mediahook serve` (SQLite) or to `serve --no-worker` plus
 * `worker` processes (PostgreSQL) while those processes are SIGKILLed at random moments and
 * started again (and, in the long form, PostgreSQL itself is restarted). Every operation's
 * callback must reach the project's receiver, which must record each `id_gen` exactly once.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { Agent, request } from 'undici';
import { openStore, type OperationResource, type Store } from '../../packages/server/src/store/index.ts';
import { rng } from './rng.ts';
import {
  type Cli,
  freshSchema,
  killAll,
  killHard,
  POSTGRES_URL,
  sleep,
  startCli,
  stopGently,
  tempDir,
  until,
} from './processes.ts';
import { startCountingReceiver } from './receiver.ts';

export interface CrashOptions {
  backend: 'sqlite' | 'postgres';
  operations: number;
  /** SIGKILLs of service processes, spread over the run. */
  kills: number;
  /** PostgreSQL restarts (long form only: other tests share the server). */
  postgresRestarts?: number;
  /** The server to use (default: the shared test server) and how to restart it. */
  postgres?: { url: string; restart(): void } | undefined;
  /** One operation in this many is a real image; the others fail at once (error callbacks). */
  imageEvery: number;
  /** Submissions are spread over this long, and kills land at random times within it. */
  durationMs: number;
  seed: number;
  /** How long delivery may take once everything is submitted. */
  settleMs: number;
  log?: (line: string) => void;
}

interface CrashFigures {
  backend: string;
  operationsSubmitted: number;
  submitRetries: number;
  operationsInStore: number;
  kills: number;
  postgresRestarts: number;
  receiverArrivals: number;
  handledOnce: number;
  duplicatesRecognised: number;
  rejectedArrivals: Record<string, number>;
  attemptsRecorded: number;
  /** Operations whose callback the receiver never accepted. */
  lost: string[];
  /** Ids whose handler ran more than once. */
  handledTwice: string[];
  /** Callbacks not delivered when the run ended. */
  notDelivered: string[];
  /** Those, counted by operation state / callback state. */
  notDeliveredStates: Record<string, number>;
  /** Service processes that died without being killed (each restarted), with their last words. */
  unexpectedExits: string[];
  /** Acknowledged (202) operations missing from the store. */
  acknowledgedMissing: string[];
  /** Succeeded operations, and the result files the receiver stored: the same number. */
  successOperations: number;
  successFiles: number;
  partialFiles: number;
  seconds: number;
}

const RETRY_SCHEDULE = '200ms,400ms,800ms,1s,1s,1s,1s,1s,1s,1s';
const LEASE = '3s';

/** `pg_ctlcluster` for the installed major version: restarts the shared server. */
function restartSharedPostgres(): void {
  const version = readdirSync('/etc/postgresql').sort().at(-1)!;
  execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'restart'], {
    stdio: 'ignore',
  });
}

export async function runCrash(options: CrashOptions): Promise<CrashFigures> {
  const log = options.log ?? (() => {});
  const started = performance.now();
  const random = rng(options.seed);
  const data = await tempDir('crash-data');
  const out = await tempDir('crash-out');
  const receiver = await startCountingReceiver(out.path);
  const postgres = options.postgres ?? { url: POSTGRES_URL, restart: restartSharedPostgres };
  const schema = options.backend === 'postgres' ? freshSchema('reliability_crash', postgres.url) : null;
  const db = schema ? `${postgres.url}?schema=${schema.schema}` : `${data.path}/mediahook.sqlite`;
  const common = ['--db', db, '--data', data.path, '--lease', LEASE];
  const workerArgs = [...common, '--allow-private-urls', '--retry-schedule', RETRY_SCHEDULE];
  const api = { url: '' };
  /** Slot 0 serves the API (and, on SQLite, delivers); the others are PostgreSQL workers. */
  const processes: Cli[] = [];
  const launch = async (slot: number): Promise<Cli> => {
    const cli =
      slot === 0
        ? await startCli(
            options.backend === 'sqlite'
              ? ['serve', '--port', '0', ...workerArgs]
              : ['serve', '--port', '0', '--no-worker', ...common],
            /listening at (http:\S+)\//,
          )
        : await startCli(['worker', ...workerArgs], /running on postgres/);
    if (slot === 0) api.url = cli.match[1]!;
    processes[slot] = cli;
    // A process that dies on its own is a finding; it is started again so the run can go on.
    void cli.exited.then(async (code) => {
      if (finishing || killed.has(cli)) return;
      figures.unexpectedExits.push(`slot ${slot} exited (${code}): ${cli.stderr().slice(-1500)}`);
      if (figures.unexpectedExits.length <= 10) await launch(slot).catch(() => {});
    });
    return cli;
  };
  const agent = new Agent({ connectTimeout: 2_000, headersTimeout: 10_000, bodyTimeout: 10_000 });
  let store: Store | undefined;
  const figures: CrashFigures = {
    backend: options.backend,
    operationsSubmitted: 0,
    submitRetries: 0,
    operationsInStore: 0,
    kills: 0,
    postgresRestarts: 0,
    receiverArrivals: 0,
    handledOnce: 0,
    duplicatesRecognised: 0,
    rejectedArrivals: {},
    attemptsRecorded: 0,
    lost: [],
    handledTwice: [],
    notDelivered: [],
    notDeliveredStates: {},
    unexpectedExits: [],
    acknowledgedMissing: [],
    successOperations: 0,
    successFiles: 0,
    partialFiles: 0,
    seconds: 0,
  };
  let stopped = false;
  /** Set once the run winds down: exits from then on are expected. */
  let finishing = false;
  const killed = new WeakSet<Cli>();
  const acknowledged: string[] = [];
  try {
    await launch(0);
    if (options.backend === 'postgres') await Promise.all([launch(1), launch(2)]);
    // Each operation is retried until the API answers 202; a POST cut off by a kill may have
    // created an operation anyway, which the store (not this list) then shows.
    const submit = async (n: number) => {
      const image = n % options.imageEvery === 0;
      const body = JSON.stringify({
        kind: 'image',
        family: n % 3 === 0 ? 'B' : 'A',
        prompt: `crash operation ${n}`,
        webhook_url: receiver.url,
        ...(image ? {} : { fail_with: `operation ${n} fails on purpose` }),
      });
      for (let attempt = 0; attempt < 600; attempt++) {
        try {
          const response = await request(`${api.url}/v1/operations`, {
            method: 'POST',
            dispatcher: agent,
            headers: { 'content-type': 'application/json' },
            body,
          });
          const answer = (await response.body.json()) as { id_gen?: string };
          if (response.statusCode === 202 && answer.id_gen) {
            acknowledged.push(answer.id_gen);
            return;
          }
        } catch {
          // The service is down or restarting: try again shortly.
        }
        figures.submitRetries++;
        await sleep(100);
      }
      throw new Error(`operation ${n} could not be submitted in 60 s`);
    };
    // Kills (and restarts of PostgreSQL) land at random times of the submission window, so they
    // hit submissions, generations and deliveries in flight; one that falls due while the
    // previous one is still restarting a process follows right after it.
    const runStart = Date.now();
    const events = [
      ...Array.from({ length: options.kills }, () => ({ kind: 'kill' as const, at: random.next() })),
      ...Array.from({ length: options.postgresRestarts ?? 0 }, () => ({
        kind: 'pg' as const,
        at: random.next(),
      })),
    ].sort((a, b) => a.at - b.at);
    const chaos = (async () => {
      for (const event of events) {
        const due = runStart + (0.05 + 0.95 * event.at) * options.durationMs;
        await until(() => stopped || Date.now() >= due, options.durationMs + 60_000, 20);
        if (stopped) return;
        if (event.kind === 'pg') {
          log(`restarting PostgreSQL at ${acknowledged.length} acknowledged`);
          postgres.restart();
          figures.postgresRestarts++;
          continue;
        }
        const slot = random.int(processes.length);
        log(`SIGKILL ${slot === 0 ? 'serve' : `worker ${slot}`} at ${acknowledged.length} acknowledged`);
        killed.add(processes[slot]!);
        await killHard(processes[slot]!);
        figures.kills++;
        await launch(slot);
      }
    })();
    const queue = Array.from({ length: options.operations }, (_, n) => n);
    try {
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let n = queue.shift(); n !== undefined; n = queue.shift()) {
            await sleep(runStart + (n * options.durationMs) / options.operations - Date.now());
            await submit(n);
          }
        }),
      );
    } finally {
      stopped = acknowledged.length < options.operations;
      await chaos;
    }
    figures.operationsSubmitted = acknowledged.length;
    log(`all ${acknowledged.length} acknowledged; waiting for delivery`);
    store = openStore(db);
    const all = async () => listAll(store!);
    const settled = await until(
      async () => {
        const ops = await all().catch(() => []);
        return ops.length >= acknowledged.length && ops.every((op) => op.callback.state === 'delivered');
      },
      options.settleMs,
      500,
    );
    // Nothing may arrive after this point: the counts below are final.
    finishing = true;
    for (const cli of processes) await stopGently(cli);
    const operations = await all();
    log(`settled: ${settled}`);
    figures.operationsInStore = operations.length;
    const inStore = new Set(operations.map((op) => op.id_gen));
    figures.acknowledgedMissing = acknowledged.filter((id) => !inStore.has(id));
    figures.successOperations = operations.filter((op) => op.state === 'succeeded').length;
    figures.notDelivered = operations
      .filter((op) => op.callback.state !== 'delivered')
      .map((op) => op.id_gen);
    for (const op of operations.filter((o) => o.callback.state !== 'delivered')) {
      const key = `${op.state}/${op.callback.state}`;
      figures.notDeliveredStates[key] = (figures.notDeliveredStates[key] ?? 0) + 1;
    }
    figures.lost = operations.filter((op) => !receiver.handled.has(op.id_gen)).map((op) => op.id_gen);
    figures.handledTwice = [...receiver.handled].filter(([, n]) => n > 1).map(([id]) => id);
    figures.handledOnce = [...receiver.handled.values()].filter((n) => n === 1).length;
    figures.duplicatesRecognised = [...receiver.duplicates.values()].reduce((a, b) => a + b, 0);
    figures.rejectedArrivals = Object.fromEntries(receiver.rejected);
    figures.receiverArrivals = receiver.arrivals();
    for (const op of operations) figures.attemptsRecorded += op.callback.attempts.length;
    const files = await receiver.files();
    figures.successFiles = files.stored.length;
    figures.partialFiles = files.partial.length;
  } finally {
    finishing = true;
    killAll();
    await agent.close();
    await store?.close();
    await receiver.close();
    await schema?.drop();
    await data.remove();
    await out.remove();
    figures.seconds = Math.round((performance.now() - started) / 100) / 10;
  }
  return figures;
}

async function listAll(store: Store): Promise<OperationResource[]> {
  const all: OperationResource[] = [];
  for (let before: string | undefined; ;) {
    const page = await store.listOperations('default', { limit: 500, before });
    all.push(...page);
    if (page.length < 500) return all;
    before = page.at(-1)!.id_gen;
  }
}

/** What is wrong with a crash run; empty when every promise held. */
export function crashProblems(f: CrashFigures, options: CrashOptions): string[] {
  const problems: string[] = [];
  const some = (ids: string[]) =>
    `${ids.length} (${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''})`;
  if (f.operationsSubmitted !== options.operations)
    problems.push(`only ${f.operationsSubmitted} operations acknowledged`);
  if (f.kills !== options.kills) problems.push(`${f.kills} kills made, not ${options.kills}`);
  if (f.postgresRestarts !== (options.postgresRestarts ?? 0))
    problems.push(`${f.postgresRestarts} PostgreSQL restarts made`);
  if (f.acknowledgedMissing.length > 0)
    problems.push(`acknowledged but not stored: ${some(f.acknowledgedMissing)}`);
  if (f.lost.length > 0) problems.push(`callbacks lost: ${some(f.lost)}`);
  if (f.notDelivered.length > 0)
    problems.push(`not delivered: ${some(f.notDelivered)} ${JSON.stringify(f.notDeliveredStates)}`);
  if (f.handledTwice.length > 0) problems.push(`handled more than once: ${some(f.handledTwice)}`);
  if (f.handledOnce !== f.operationsInStore)
    problems.push(`${f.handledOnce} ids handled once, ${f.operationsInStore} operations`);
  if (f.unexpectedExits.length > 0)
    problems.push(`processes died on their own: ${f.unexpectedExits.join(' | ').slice(0, 3000)}`);
  if (f.partialFiles > 0) problems.push(`${f.partialFiles} partial files left in the receiver's directory`);
  if (f.successFiles !== f.successOperations)
    problems.push(`${f.successFiles} files stored for ${f.successOperations} results`);
  // A kill mid-upload cuts a body off: the receiver refuses it as aborted, and nothing else.
  const odd = Object.keys(f.rejectedArrivals).filter((code) => code !== 'aborted' && code !== 'timeout');
  if (odd.length > 0) problems.push(`the receiver refused callbacks: ${JSON.stringify(f.rejectedArrivals)}`);
  return problems;
}
