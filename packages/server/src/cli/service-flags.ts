import { join, resolve } from 'node:path';
import { type BlobStore, openBlobStore, type SsrfPolicy, validateSsrfPolicy } from '../delivery/index.ts';
import type { Generator } from '../service/generators/index.ts';
import { jsonLogger } from '../service/json-log.ts';
import type { ServiceOptions } from '../service/service.ts';
import { builtInGenerator, commandGenerator, limitConcurrency } from '../service/generators/index.ts';
import { openStore, type Store } from '../store/index.ts';
import {
  type CliIo,
  durationFlag,
  parseDurationList,
  secretFlags,
  sizeFlag,
  UsageError,
} from 'mediahook/internal';

/** Flags `serve` and `worker` share. */
export const SERVICE_FLAG_OPTIONS = {
  db: { type: 'string' },
  data: { type: 'string' },
  blobs: { type: 'string' },
  'allow-private-urls': { type: 'boolean' },
  'allow-url': { type: 'string', multiple: true },
  secret: { type: 'string', multiple: true },
  'retry-schedule': { type: 'string' },
  'generator-command': { type: 'string' },
  'generator-timeout': { type: 'string' },
  'generator-max-output': { type: 'string' },
  concurrency: { type: 'string' },
  lease: { type: 'string' },
} as const;

export const SERVICE_FLAG_USAGE = `  --db FILE|postgres://…  the store: a SQLite file (default DATA/mediahook.sqlite) or PostgreSQL
  --data DIR              result files and scratch space (default ./data)
  --blobs DIR|postgres|s3://BUCKET/PREFIX  where result files are kept (default DATA/results):
                          postgres (the --db database) or S3 let machines with no shared disk
                          deliver each other's results (S3: AWS_* variables, profiles, roles)
  --allow-private-urls    let callbacks go to loopback and private addresses (local work)
  --allow-url CIDR|HOST   let callbacks go to this address range or host (repeatable)
  --secret whsec_…        sign callbacks (repeat to sign with several secrets, for rotation)
  --retry-schedule LIST   delays between tries, as in 5s,5m,30m,2h,5h,10h,10h (the default)
  --generator-command CMD run this program to generate (operation as JSON on stdin), instead
                          of the built-in generators
  --generator-timeout DUR with --generator-command: stop the program after this (default 5m)
  --generator-max-output SIZE  with --generator-command: largest result file (default 1GiB)
  --concurrency N         generations at once (default 2)
  --lease DUR             how long a claim on work lasts: when a process dies, others take its
                          work over after this (default 10m for deliveries, 60s for generations)
`;

interface ServiceFlags {
  db?: string;
  data?: string;
  blobs?: string;
  'allow-private-urls'?: boolean;
  'allow-url'?: string[];
  secret?: string[];
  'retry-schedule'?: string;
  'generator-command'?: string;
  'generator-timeout'?: string;
  'generator-max-output'?: string;
  concurrency?: string;
  lease?: string;
}

interface ServiceSetup {
  store: Store;
  dataDir: string;
  blobs: BlobStore;
  generator: Generator;
  ssrf: SsrfPolicy;
  secrets: string[];
  retrySchedule: number[] | undefined;
  concurrency: number;
  leaseMs: number | undefined;
}

/** Reads the shared flags and opens (and migrates) the store they name. */
export async function serviceSetup(values: ServiceFlags, io: CliIo): Promise<ServiceSetup> {
  const dataDir = resolve(values.data ?? 'data');
  const secrets = secretFlags(values.secret);
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
  const base = generatorOf(values);
  // Log lines are NDJSON, machine output: stdout, while stderr keeps the human lines.
  const log = jsonLogger((line) => io.stdout.write(line));
  const store = openStore(values.db ?? join(dataDir, 'mediahook.sqlite'), {
    // A dropped PostgreSQL connection (or a failed WAL checkpoint) is logged as JSON like
    // everything else the service logs, not as a Node warning with a trace hint.
    onBackgroundError: (error) => log('warn', 'store_background_error', { error }),
  });
  let blobs: BlobStore;
  try {
    await store.migrate();
    blobs = await openBlobStore(values.blobs, {
      dataDir,
      db: values.db,
      // With PostgreSQL the directory is shared by every process, often over a network file
      // system, where a blocking read would hold the event loop for the network's time.
      directory: store.dialect === 'postgres' ? { blockingReadMaxBytes: 0 } : {},
    });
  } catch (error) {
    await store.close();
    if ((error as { name?: string }).name === 'BlobStoreError') {
      throw new UsageError(`--blobs: ${(error as Error).message}`);
    }
    throw error;
  }
  return {
    store,
    dataDir,
    blobs,
    generator: limitConcurrency(base, concurrency),
    ssrf: { allowPrivate: values['allow-private-urls'] === true, allow: values['allow-url'] ?? [] },
    secrets,
    retrySchedule,
    concurrency,
    leaseMs,
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
    ssrf: setup.ssrf,
    retrySchedule: setup.retrySchedule,
    generationConcurrency: setup.concurrency,
    leaseMs: setup.leaseMs,
  };
}

/** The command generator the flags describe, or the built-in ones. */
function generatorOf(values: ServiceFlags): Generator {
  const command = values['generator-command'];
  const timeout = values['generator-timeout'];
  const maxOutput = values['generator-max-output'];
  if (command === undefined) {
    if (timeout !== undefined || maxOutput !== undefined) {
      throw new UsageError('--generator-timeout and --generator-max-output go with --generator-command');
    }
    return builtInGenerator();
  }
  return commandGenerator(splitCommand(command), {
    timeoutMs: durationFlag('--generator-timeout', timeout, undefined, { min: 1000 }),
    maxOutputBytes: sizeFlag('--generator-max-output', maxOutput),
  });
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
