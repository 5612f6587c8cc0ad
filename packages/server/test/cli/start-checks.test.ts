/**
 * The checks before "listening": a misconfigured `serve`, `worker` or `demo` exits 1 with one
 * line naming what failed and what to do (no stack trace), a wrong `--db` is a usage error, and
 * `mediahook doctor` prints a row per check. Real processes, a real s3rver, real PostgreSQL.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, closedPort, runToExit } from '../../../mediahook/test/cli/helpers.ts';
import { S3_BUCKET, type S3Server, startS3Server } from '../blobs/s3-server.ts';
import { freshSchema } from '../../../../test/support/processes.ts';

/** The limit the checks must keep: a command that cannot start says so within it. */
const START_LIMIT_MS = 15_000;
const POSTGRES = process.env['MEDIAHOOK_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/test';

type Ran = Awaited<ReturnType<typeof runToExit>>;

/** An environment with no AWS settings of this machine's: nothing from its profiles or roles. */
function isolatedEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('AWS_')) env[name] = value;
  return {
    ...env,
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials',
    AWS_CONFIG_FILE: '/nonexistent/config',
    ...extra,
  };
}

/** Runs the command; one that has not exited within the start limit fails. */
function run(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Ran> {
  return runToExit(BIN, args, {
    cwd: options.cwd,
    env: options.env ?? isolatedEnv(),
    limitMs: START_LIMIT_MS,
  });
}

/** Expects exit 1 and exactly one line `mediahook: cannot start: … (…)` on stderr, matching `what`. */
function expectCannotStart(ran: Ran, what: RegExp): void {
  expect(ran.code, ran.stderr).toBe(1);
  const lines = ran.stderr.split('\n').filter((line) => line !== '');
  expect(lines, ran.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^mediahook: cannot start: .+ \(.+\)$/);
  expect(lines[0]).toMatch(what);
  expect(ran.stderr).not.toMatch(/\n\s+at /);
}

let s3: S3Server;
let dir: string;

beforeAll(async () => {
  s3 = await startS3Server();
  dir = await mkdtemp(join(tmpdir(), 'mediahook-start-checks-'));
});

afterAll(async () => {
  await s3.close();
  await rm(dir, { recursive: true, force: true });
});

/** A fresh directory under the test's own. */
async function fresh(): Promise<string> {
  return mkdtemp(join(dir, 'run-'));
}

/** The flags `command` needs besides the one under test. */
function base(command: string, data: string, db?: string): string[] {
  if (command === 'demo') return ['demo', '--port', '0', '--receiver-port', '0', '--exit', '--data', data];
  if (command === 'worker') return ['worker', '--db', db ?? join(data, 'mediahook.sqlite'), '--data', data];
  return ['serve', '--port', '0', '--data', data, ...(db ? ['--db', db] : [])];
}

// The checks are one module: each failure is tried on the commands it matters most to.
describe('a command that cannot start', () => {
  it.each(['serve', 'worker', 'demo'])('%s: s3:// with no credentials', async (command) => {
    const data = await fresh();
    const env = isolatedEnv({ AWS_ENDPOINT_URL: s3.endpoint, AWS_REGION: 'us-east-1' });
    const ran = await run([...base(command, data), '--blobs', `s3://${S3_BUCKET}/results`], { env });
    expectCannotStart(
      ran,
      /blob store s3:\/\/mediahook-test\/results\/.*\(give credentials: AWS_ACCESS_KEY_ID/,
    );
  });

  it('serve: s3:// with a bucket that does not exist', async () => {
    const data = await fresh();
    const ran = await run([...base('serve', data), '--blobs', 's3://no-such-bucket/results'], {
      env: isolatedEnv(s3.env),
    });
    expectCannotStart(ran, /s3:\/\/no-such-bucket\/results\/.*\(create the bucket/);
  });

  it.each(['serve', 'demo'])('%s: ffmpeg missing', async (command) => {
    const data = await fresh();
    const ran = await run(base(command, data), {
      env: isolatedEnv({ MEDIAHOOK_FFMPEG_PATH: join(dir, 'no-ffmpeg-here') }),
    });
    expectCannotStart(
      ran,
      /ffmpeg is not available: MEDIAHOOK_FFMPEG_PATH=.*no-ffmpeg-here.*\(correct or unset/,
    );
  });

  it('demo: keeps no directory of its own once a check failed', async () => {
    const temp = await fresh();
    const ran = await run(['demo', '--port', '0', '--receiver-port', '0', '--exit'], {
      env: isolatedEnv({ TMPDIR: temp, MEDIAHOOK_FFMPEG_PATH: join(dir, 'no-ffmpeg-here') }),
    });
    expectCannotStart(ran, /ffmpeg is not available/);
    expect(await readdir(temp)).toEqual([]);
  });

  it.each(['serve', 'worker'])('%s: a database nothing answers at', async (command) => {
    const data = await fresh();
    const db = `postgres://postgres@127.0.0.1:${await closedPort()}/test`;
    const ran = await run(base(command, data, db));
    expectCannotStart(
      ran,
      /the database postgres:\/\/postgres@127\.0\.0\.1:\d+\/test is not usable: .*ECONNREFUSED/,
    );
  });

  it('worker: a SQLite --db in a directory that does not exist', async () => {
    const data = await fresh();
    const ran = await run(base('worker', data, join(data, 'missing', 'store.sqlite')));
    expectCannotStart(ran, /the directory of --db .* does not exist: .*missing \(create it/);
    expect(existsSync(join(data, 'missing'))).toBe(false);
  });

  it('serve: a --generator-command program that is not there', async () => {
    const data = await fresh();
    const ran = await run([...base('serve', data), '--generator-command', 'no-such-model --fast']);
    expectCannotStart(ran, /--generator-command program no-such-model is not found on PATH/);
  });
});

describe('--db', () => {
  it('refuses another scheme as a usage error (exit 2) and creates no file', async () => {
    const db = 'mysql://app@127.0.0.1/db';
    const cwd = await fresh();
    const runs = await Promise.all(
      [
        ['serve', '--db', db, '--port', '0'],
        ['worker', '--db', db],
        ['doctor', '--db', db],
        ['keys', 'create', '--client', 'ops', '--db', db],
      ].map((args) => run(args, { cwd })),
    );
    for (const ran of runs) {
      expect(ran.code, ran.stderr).toBe(2);
      expect(ran.stderr).toContain('--db: mysql: is not a store');
    }
    expect(await readdir(cwd)).toEqual([]);
  });

  it('takes a path, sqlite:PATH and a postgresql:// URL; creates --data when it is missing', async () => {
    const cwd = await fresh();
    const plain = await run(['doctor', '--data', 'new-data'], { cwd });
    expect(plain.code, plain.stdout).toBe(0);
    expect(plain.stdout).toContain(`sqlite ${join(cwd, 'new-data', 'mediahook.sqlite')}, migrated`);
    const prefixed = await run(['doctor', '--data', 'new-data', '--db', 'sqlite:other.sqlite'], { cwd });
    expect(prefixed.stdout).toContain(`sqlite ${join(cwd, 'other.sqlite')}, migrated`);
    // A schema of its own: the shared database's public schema belongs to no test.
    const schema = freshSchema('doctor_test', POSTGRES);
    try {
      const postgres = `${POSTGRES.replace(/^postgres:/, 'postgresql:')}?schema=${schema.schema}`;
      const remote = await run(['doctor', '--data', 'new-data', '--db', postgres], { cwd });
      expect(remote.code, remote.stdout).toBe(0);
      expect(remote.stdout).toMatch(/^ok {4}database {3}postgres postgresql:\/\/.*, migrated$/m);
    } finally {
      await schema.drop();
    }
  });
});

describe('mediahook doctor', () => {
  it('prints a row per check and exits 0 when every one passes', async () => {
    const data = await fresh();
    const ran = await run(['doctor', '--data', data, '--blobs', `s3://${S3_BUCKET}/doctor`], {
      env: isolatedEnv(s3.env),
    });
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    const rows = ran.stdout.trim().split('\n');
    expect(rows).toEqual([
      `ok    database   sqlite ${join(data, 'mediahook.sqlite')}, migrated`,
      `ok    blobs      s3://${S3_BUCKET}/doctor/: a file written, read back and removed`,
      expect.stringMatching(/^ok {4}generator {2}ffmpeg \S+ \(from \w+\) runs$/),
    ]);
    expect(ran.stderr).not.toContain('NodeVersionSupportWarning');
  });

  it('runs every check, marks each failure with what to do, and exits 1', async () => {
    const data = await fresh();
    const notExecutable = join(data, 'model.sh');
    await writeFile(notExecutable, '#!/bin/sh\n', { mode: 0o644 });
    const db = `postgres://postgres@127.0.0.1:${await closedPort()}/test`;
    const ran = await run(
      [
        'doctor',
        '--data',
        data,
        '--db',
        db,
        '--blobs',
        's3://no-such-bucket/x',
        '--generator-command',
        notExecutable,
      ],
      { env: isolatedEnv(s3.env) },
    );
    expect(ran.code).toBe(1);
    const rows = ran.stdout.trim().split('\n');
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(
      /^FAIL {2}database {3}the database .* ECONNREFUSED .*\(check that PostgreSQL runs/,
    );
    expect(rows[1]).toMatch(
      /^FAIL {2}blobs {6}the blob store s3:\/\/no-such-bucket\/x\/ .*\(create the bucket/,
    );
    expect(rows[2]).toMatch(
      /^FAIL {2}generator {2}the --generator-command program .*model\.sh is not executable/,
    );
  });
});
