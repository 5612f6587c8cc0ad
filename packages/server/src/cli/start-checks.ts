/**
 * What the service's commands check before they accept work: the database answers and is
 * migrated, the blob store round-trips a file, the generator's program runs. `serve`, `worker`
 * and `demo` stop at the first failure with one line saying what failed and what to do;
 * `mediahook doctor` runs every check and prints a row each.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { type BlobStore, openBlobStore, probeBlobStore } from '../delivery/index.ts';
import { FFMPEG_PATH_ENV, ffmpegBinary } from '../service/generators/index.ts';
import { isStoreError, type Store, type StoreOptions } from '../store/index.ts';
import { openStore, parseDbLocation } from '../store/open-store.ts';
import { type CliIo, escapeControls, UsageError } from 'mediahook/internal';

/** Every check shares this budget: a command that cannot start says so within 15 s. */
const CHECKS_BUDGET_MS = 12_000;

type CheckName = 'database' | 'blobs' | 'generator';

/** One check's verdict: what was found, or what failed and what to do about it. */
interface CheckResult {
  name: CheckName;
  ok: boolean;
  /** What was checked and found (`ok`), or what failed. One line. */
  detail: string;
  /** What to do, when it failed. */
  hint?: string;
}

/** What the checks look at, as the command's flags give it. */
export interface StartPlan {
  /** The `--db` value, or the default SQLite file in the data directory. */
  db: string;
  /** `--db` was given: a SQLite file's directory must exist then (the data directory is made). */
  dbGiven: boolean;
  dataDir: string;
  blobs: string | undefined;
  /** The `--generator-command` program, or undefined for the built-in generators (ffmpeg). */
  generatorProgram: string | undefined;
  storeOptions?: StoreOptions;
  /** Options for a directory blob store. */
  directory?: { blockingReadMaxBytes?: number };
}

/** The checks' verdicts, and the store and blob store they opened (when their checks passed). */
interface CheckRun {
  results: CheckResult[];
  store: Store | undefined;
  blobs: BlobStore | undefined;
}

/** A failure found by a check: its one-line detail and the hint. */
class CheckFailure extends Error {
  readonly hint: string;

  constructor(detail: string, hint: string) {
    super(detail);
    this.hint = hint;
  }
}

/** The first line of an error's text (an AggregateError's first inner error when it has none). */
function reasonOf(error: unknown): string {
  let current = error;
  // The store wraps a failed migration; its cause says what really went wrong.
  if (isStoreError(current) && current.code === 'migration_failed' && current.cause) current = current.cause;
  if (current instanceof AggregateError && current.message === '' && current.errors.length > 0) {
    current = current.errors[0];
  }
  const text = current instanceof Error ? current.message || current.name : String(current);
  return escapeControls(text.split('\n')[0]!.trim());
}

/** `text` with the password of a URL in it hidden. */
function shownDb(db: string): string {
  try {
    const url = new URL(db);
    if (url.password !== '') url.password = '***';
    return url.href;
  } catch {
    return db;
  }
}

/** Runs `work`, failing it when the shared budget runs out first. */
async function withinBudget<T>(
  deadline: number,
  what: string,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const left = Math.max(deadline - Date.now(), 0);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`${what} did not answer within ${Math.round(CHECKS_BUDGET_MS / 1000)} s`);
      controller.abort(error);
      reject(error);
    }, left);
  });
  try {
    return await Promise.race([work(controller.signal), late]);
  } finally {
    clearTimeout(timer);
  }
}

async function checkDatabase(plan: StartPlan, deadline: number): Promise<{ store: Store; detail: string }> {
  const location = parseDbLocation(plan.db);
  const shown = location.dialect === 'sqlite' ? resolve(location.path) : shownDb(location.url);
  if (location.dialect === 'sqlite' && plan.dbGiven) {
    const directory = dirname(resolve(location.path));
    const found = await stat(directory).catch(() => null);
    if (!found?.isDirectory()) {
      throw new CheckFailure(
        `the directory of --db ${location.path} does not exist: ${directory}`,
        'create it, or give a file in a directory that exists',
      );
    }
  }
  let store: Store;
  try {
    store = openStore(plan.db, plan.storeOptions);
  } catch (error) {
    if (isStoreError(error) && error.code === 'driver_missing') {
      throw new CheckFailure(
        `the SQLite driver is not usable: ${reasonOf(error)}`,
        'its install script did not run: npm rebuild better-sqlite3, or use --db postgres://…',
      );
    }
    throw new CheckFailure(`the database ${shown} cannot be opened: ${reasonOf(error)}`, 'check --db');
  }
  try {
    await withinBudget(deadline, 'the database', () => store.migrate());
  } catch (error) {
    await store.close().catch(() => {});
    throw new CheckFailure(
      `the database ${shown} is not usable: ${reasonOf(error)}`,
      location.dialect === 'postgres'
        ? 'check that PostgreSQL runs, that --db names it, and that its user may create tables'
        : 'check that the file and its directory are writable by this user',
    );
  }
  return { store, detail: `${location.dialect} ${shown}, migrated` };
}

/** What to do about a blob store that did not round-trip, by what the error says. */
function blobsHint(spec: string | undefined, error: unknown): string {
  const { name, code } = error as { name?: string; code?: string };
  if (spec?.startsWith('s3://')) {
    if (name === 'CredentialsProviderError') {
      return 'give credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile (AWS_PROFILE) or a role';
    }
    if (name === 'NoSuchBucket') return 'create the bucket, or correct the bucket in --blobs';
    if (/region/i.test(reasonOf(error)) || name === 'PermanentRedirect') {
      return "set AWS_REGION to the bucket's region";
    }
    if (name === 'AccessDenied' || name === 'InvalidAccessKeyId' || name === 'SignatureDoesNotMatch') {
      return 'check the credentials, and that they may put, get and delete objects under the prefix';
    }
    return 'check --blobs and the AWS_* settings (AWS_ENDPOINT_URL, AWS_REGION, credentials)';
  }
  if (spec === 'postgres') return 'check that PostgreSQL runs and that --db names it';
  if (code === 'ENOSPC') return 'free space on that disk, or choose another directory with --blobs';
  return 'make the directory writable by this user, or choose another with --blobs';
}

async function checkBlobs(plan: StartPlan, deadline: number): Promise<{ blobs: BlobStore; detail: string }> {
  let blobs: BlobStore;
  try {
    blobs = await withinBudget(deadline, 'the blob store', () =>
      openBlobStore(plan.blobs, { dataDir: plan.dataDir, db: plan.db, directory: plan.directory ?? {} }),
    );
  } catch (error) {
    if ((error as { name?: string }).name === 'BlobStoreError') {
      throw new UsageError(`--blobs: ${(error as Error).message}`);
    }
    throw new CheckFailure(
      `the blob store ${plan.blobs ?? ''} cannot be opened: ${reasonOf(error)}`,
      blobsHint(plan.blobs, error),
    );
  }
  try {
    await withinBudget(deadline, 'the blob store', (signal) => probeBlobStore(blobs, signal));
  } catch (error) {
    await blobs.close().catch(() => {});
    throw new CheckFailure(
      `the blob store ${blobs.location} does not keep a file: ${reasonOf(error)}`,
      blobsHint(plan.blobs, error),
    );
  }
  return { blobs, detail: `${blobs.location}: a file written, read back and removed` };
}

/** Where `program` is: itself when it names a path, else the first match on PATH. */
async function findProgram(program: string): Promise<string | null> {
  const candidates = program.includes('/')
    ? [isAbsolute(program) ? program : resolve(program)]
    : (process.env['PATH'] ?? '')
        .split(delimiter)
        .filter((dir) => dir !== '')
        .map((dir) => join(dir, program));
  for (const candidate of candidates) {
    const found = await stat(candidate).catch(() => null);
    if (found?.isFile()) return candidate;
  }
  return null;
}

async function checkGenerator(plan: StartPlan, deadline: number): Promise<string> {
  const program = plan.generatorProgram;
  if (program === undefined) {
    try {
      const ffmpeg = await withinBudget(deadline, 'ffmpeg', () => ffmpegBinary());
      return `ffmpeg ${ffmpeg.path} (from ${ffmpeg.source === 'env' ? FFMPEG_PATH_ENV : ffmpeg.source}) runs`;
    } catch (error) {
      throw new CheckFailure(
        reasonOf(error),
        process.env[FFMPEG_PATH_ENV]
          ? `correct or unset ${FFMPEG_PATH_ENV}`
          : `install ffmpeg on PATH (or @ffmpeg-installer/ffmpeg with its install script), or set ${FFMPEG_PATH_ENV}`,
      );
    }
  }
  const found = await findProgram(program);
  if (found === null) {
    throw new CheckFailure(
      `the --generator-command program ${program} is not found${program.includes('/') ? '' : ' on PATH'}`,
      'install it, or give its path',
    );
  }
  try {
    await access(found, constants.X_OK);
  } catch {
    throw new CheckFailure(
      `the --generator-command program ${found} is not executable`,
      `make it executable (chmod +x ${found})`,
    );
  }
  return `--generator-command ${found} is executable`;
}

/**
 * Runs the checks named, in order: `database` opens and migrates the store, `blobs` opens the
 * blob store and round-trips a probe file, `generator` finds ffmpeg or the command's program.
 * With `keepGoing` every check runs (doctor); otherwise the first failure ends the run. What a
 * check opened is returned open when it passed; the caller closes it. A wrong flag found on the
 * way (`--blobs` that names no store) is thrown as a usage error.
 */
export async function runChecks(
  plan: StartPlan,
  names: readonly CheckName[],
  options: { keepGoing: boolean },
): Promise<CheckRun> {
  const run: CheckRun = { results: [], store: undefined, blobs: undefined };
  const deadline = Date.now() + CHECKS_BUDGET_MS;
  const checks: Record<CheckName, () => Promise<string>> = {
    database: async () => {
      const { store, detail } = await checkDatabase(plan, deadline);
      run.store = store;
      return detail;
    },
    blobs: async () => {
      const { blobs, detail } = await checkBlobs(plan, deadline);
      run.blobs = blobs;
      return detail;
    },
    generator: () => checkGenerator(plan, deadline),
  };
  try {
    for (const name of names) {
      try {
        run.results.push({ name, ok: true, detail: await checks[name]() });
      } catch (error) {
        if (!(error instanceof CheckFailure)) throw error;
        run.results.push({ name, ok: false, detail: error.message, hint: error.hint });
        if (!options.keepGoing) break;
      }
    }
  } catch (error) {
    await closeOpened(run);
    throw error;
  }
  return run;
}

/** Closes what a run of the checks opened. */
export async function closeOpened(run: {
  store?: Store | undefined;
  blobs?: BlobStore | undefined;
}): Promise<void> {
  await Promise.all([run.store?.close(), run.blobs?.close()]);
}

/**
 * Runs the checks a command needs before it starts. When one fails: closes what was opened,
 * writes `mediahook: cannot start: <what failed> (<what to do>)` and returns null.
 */
export async function checkBeforeStart(
  plan: StartPlan,
  names: readonly CheckName[],
  io: CliIo,
): Promise<{ store: Store; blobs: BlobStore | undefined } | null> {
  const run = await runChecks(plan, names, { keepGoing: false });
  const failed = run.results.find((result) => !result.ok);
  if (failed === undefined && run.store !== undefined) return { store: run.store, blobs: run.blobs };
  await closeOpened(run);
  io.stderr.write(
    `mediahook: cannot start: ${failed?.detail ?? 'no store'} (${failed?.hint ?? 'check --db'})\n`,
  );
  return null;
}
