import { resolve } from 'node:path';
import { type BlobStore, type SsrfPolicy, validateSsrfPolicy } from '../delivery/index.ts';
import type { Generator } from '../service/generators/index.ts';
import { jsonLogger } from '../service/json-log.ts';
import type { ServiceOptions } from '../service/service.ts';
import { builtInGenerator, commandGenerator, limitConcurrency } from '../service/generators/index.ts';
import type { Store } from '../store/index.ts';
import { parseDbLocation } from '../store/open-store.ts';
import { checkBeforeStart, type StartPlan } from './start-checks.ts';
import { type CliIo, durationFlag, parseDurationList, sizeFlag, UsageError } from 'mediahook/internal';
import {
  defaultSecretsOf,
  SECRET_FLAG_OPTIONS,
  secretKeyOf,
  storeLocationOf,
  storeNamed,
} from './secret-sources.ts';

/** Flags `serve` and `worker` share. */
export const SERVICE_FLAG_OPTIONS = {
  db: { type: 'string' },
  data: { type: 'string' },
  blobs: { type: 'string' },
  'allow-private-urls': { type: 'boolean' },
  'allow-url': { type: 'string', multiple: true },
  ...SECRET_FLAG_OPTIONS,
  'secret-overlap': { type: 'string' },
  'retry-schedule': { type: 'string' },
  'generator-command': { type: 'string' },
  'generator-timeout': { type: 'string' },
  'generator-max-output': { type: 'string' },
  concurrency: { type: 'string' },
  lease: { type: 'string' },
  'fault-retry-for': { type: 'string' },
} as const;

export const SERVICE_FLAG_USAGE = `  --db FILE|postgres://…  the store: a SQLite file (default DATA/mediahook.sqlite) or PostgreSQL;
                          also MEDIAHOOK_DB (keeps a password out of ps), PG* variables
  --data DIR              result files and scratch space (default ./data)
  --blobs DIR|postgres|s3://BUCKET/PREFIX  where result files are kept (default DATA/results):
                          postgres (the --db database) or S3 let machines with no shared disk
                          deliver each other's results (S3: AWS_* variables, profiles, roles)
  --allow-private-urls    let callbacks go to loopback and private addresses (local work)
  --allow-url CIDR|HOST   let callbacks go to this address range or host (repeatable)
  --secret whsec_…        client default's signing secret (repeat to sign with several, for
                          rotation); better --secret-file FILE or MEDIAHOOK_SECRET (several
                          space-separated), out of ps. Other clients' secrets are in the store
  --secret-key TEXT       seal clients' secrets in the store (AES-256-GCM); also
                          --secret-key-file FILE or MEDIAHOOK_SECRET_KEY
  --secret-overlap DUR    how long a rotated client secret still signs beside the new one
                          (default 24h)
  --retry-schedule LIST   delays between tries, as in 5s,5m,30m,2h,5h,10h,10h (the default)
  --generator-command CMD run this program to generate (operation as JSON on stdin), instead
                          of the built-in generators
  --generator-timeout DUR with --generator-command: stop the program after this (default 5m)
  --generator-max-output SIZE  with --generator-command: largest result file (default 1GiB)
  --concurrency N         generations at once (default 2)
  --lease DUR             how long a claim on work lasts: when a process dies, others take its
                          work over after this (default 10m for deliveries, 60s for generations)
  --fault-retry-for DUR   how long an outage of the database, blob store, disk or generator
                          program is waited out, tried again with backoff, before the
                          operation fails (default 24h)
`;

interface ServiceFlags {
  db?: string;
  data?: string;
  blobs?: string;
  'allow-private-urls'?: boolean;
  'allow-url'?: string[];
  secret?: string[];
  'secret-file'?: string;
  'secret-key'?: string;
  'secret-key-file'?: string;
  'secret-overlap'?: string;
  'retry-schedule'?: string;
  'generator-command'?: string;
  'generator-timeout'?: string;
  'generator-max-output'?: string;
  concurrency?: string;
  lease?: string;
  'fault-retry-for'?: string;
}

interface ServiceSetup {
  store: Store;
  dataDir: string;
  blobs: BlobStore;
  generator: Generator;
  ssrf: SsrfPolicy;
  secrets: string[];
  secretKey: string | undefined;
  secretOverlapMs: number | undefined;
  retrySchedule: number[] | undefined;
  concurrency: number;
  leaseMs: number | undefined;
  faultRetryForMs: number | undefined;
}

/**
 * The `--db` value, or the default SQLite file in the data directory; any other `scheme:` than
 * `sqlite:`, `postgres://` and `postgresql://` is a usage error.
 */
export function dbFlag(value: string | undefined, dataDir: string): { db: string; given: boolean } {
  const db = storeLocationOf(value, dataDir);
  const given = storeNamed(value);
  if (!given) return { db, given };
  try {
    parseDbLocation(db);
  } catch (error) {
    throw new UsageError(`${value === undefined ? 'MEDIAHOOK_DB' : '--db'}: ${(error as Error).message}`);
  }
  return { db, given };
}

/**
 * Reads the shared flags, then runs the start-up checks (start-checks.ts), which open (and
 * migrate) the store and open the blob store. Null when a check failed: its line is written.
 */
export async function serviceSetup(values: ServiceFlags, io: CliIo): Promise<ServiceSetup | null> {
  const plan = servicePlan(values, io);
  const checked = await checkBeforeStart(plan.checks, ['database', 'blobs', 'generator'], io);
  if (checked === null) return null;
  return { ...plan.setup, store: checked.store, blobs: checked.blobs! };
}

/** What the shared flags ask for: the checks to run, and the rest of the set-up. */
export function servicePlan(
  values: ServiceFlags,
  io: CliIo,
): { checks: StartPlan; setup: Omit<ServiceSetup, 'store' | 'blobs'> } {
  const dataDir = resolve(values.data ?? 'data');
  const { db, given } = dbFlag(values.db, dataDir);
  const secrets = defaultSecretsOf(values);
  const secretKey = secretKeyOf(values);
  const secretOverlapMs = durationFlag('--secret-overlap', values['secret-overlap'], undefined, {
    min: 1000,
  });
  let retrySchedule: number[] | undefined;
  if (values['retry-schedule'] !== undefined) {
    try {
      retrySchedule = parseDurationList(values['retry-schedule']);
    } catch (error) {
      throw new UsageError(`--retry-schedule: ${(error as Error).message}`);
    }
  }
  try {
    validateSsrfPolicy({ allow: values['allow-url'] ?? [] });
  } catch (error) {
    throw new UsageError(`--allow-url: ${(error as Error).message}`);
  }
  const concurrency = Number(values.concurrency ?? 2);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
    throw new UsageError('--concurrency takes 1 to 64');
  }
  const leaseMs = durationFlag('--lease', values.lease, undefined, { min: 1000 });
  const faultRetryForMs = durationFlag('--fault-retry-for', values['fault-retry-for'], undefined, {
    min: 1000,
  });
  const { generator, program } = generatorOf(values);
  // Log lines are NDJSON, machine output: stdout, while stderr keeps the human lines.
  const log = jsonLogger((line) => io.stdout.write(line));
  const postgres = parseDbLocation(db).dialect === 'postgres';
  return {
    checks: {
      db,
      dbGiven: given,
      dataDir,
      blobs: values.blobs,
      generatorProgram: program,
      storeOptions: {
        // A dropped PostgreSQL connection (or a failed WAL checkpoint) is logged as JSON like
        // everything else the service logs, not as a Node warning with a trace hint.
        onBackgroundError: (error) => log('warn', 'store_background_error', { error }),
      },
      // With PostgreSQL the directory is shared by every process, often over a network file
      // system, where a blocking read would hold the event loop for the network's time.
      directory: postgres ? { blockingReadMaxBytes: 0 } : {},
    },
    setup: {
      dataDir,
      generator: limitConcurrency(generator, concurrency),
      ssrf: { allowPrivate: values['allow-private-urls'] === true, allow: values['allow-url'] ?? [] },
      secrets,
      secretKey,
      secretOverlapMs,
      retrySchedule,
      concurrency,
      leaseMs,
      faultRetryForMs,
    },
  };
}

/** The service's options from the shared flags, as `serve` and `worker` both run it. */
export function serviceOptionsOf(setup: ServiceSetup): ServiceOptions {
  return {
    store: setup.store,
    dataDir: setup.dataDir,
    blobs: setup.blobs,
    generator: setup.generator,
    secrets: setup.secrets,
    secretKey: setup.secretKey,
    secretOverlapMs: setup.secretOverlapMs,
    ssrf: setup.ssrf,
    retrySchedule: setup.retrySchedule,
    generationConcurrency: setup.concurrency,
    leaseMs: setup.leaseMs,
    faultRetryForMs: setup.faultRetryForMs,
  };
}

/** The command generator the flags describe (and its program), or the built-in ones. */
function generatorOf(values: ServiceFlags): { generator: Generator; program: string | undefined } {
  const command = values['generator-command'];
  const timeout = values['generator-timeout'];
  const maxOutput = values['generator-max-output'];
  if (command === undefined) {
    if (timeout !== undefined || maxOutput !== undefined) {
      throw new UsageError('--generator-timeout and --generator-max-output go with --generator-command');
    }
    return { generator: builtInGenerator(), program: undefined };
  }
  const argv = splitCommand(command);
  const generator = commandGenerator(argv, {
    timeoutMs: durationFlag('--generator-timeout', timeout, undefined, { min: 1000 }),
    maxOutputBytes: sizeFlag('--generator-max-output', maxOutput),
  });
  return { generator, program: argv[0] };
}

/** Splits a command line on white space, honouring single and double quotes (no shell). */
function splitCommand(text: string): string[] {
  const words: string[] = [];
  const pattern = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    words.push(match[1] ?? match[2] ?? match[3]!);
  }
  if (words.length === 0) throw new UsageError('--generator-command is empty');
  return words;
}
