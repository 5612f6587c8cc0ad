/**
 * Shared-nothing scale-out: `serve --no-worker` and two `worker` processes, each on a --data
 * directory of its own, one PostgreSQL store, results kept in PostgreSQL or S3. Every callback
 * is delivered once, the API serves results it never had on its disk, no result file is left in
 * any --data, and a worker killed while uploading a result loses nothing and leaves no blob.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { FormData, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BlobStore, openBlobStore, S3BlobStore } from '../../src/delivery/index.ts';
import { openStore, type Store } from '../../src/store/index.ts';
import { S3_BUCKET, S3_CREDENTIALS, type S3Server, startS3Server } from '../blobs/s3-server.ts';
import { POSTGRES_URL, probePostgres } from '../store/backends.ts';
import {
  type ServeProcess,
  SECRET,
  startServeProcess,
  startTempReceiving,
  startWorkerProcess,
  type TempReceiving,
} from './service-harness.ts';

const problem = await probePostgres();
if (problem && process.env.CI !== 'true') {
  console.warn(`scale-out: SKIPPING, PostgreSQL is unreachable (${problem})`);
}

/** Writes a JPEG of `MEDIAHOOK_TEST_BYTES` (prompt `big`) or 20 kB, then says which worker ran it. */
const GENERATOR = `
const fs = require('node:fs');
const input = JSON.parse(fs.readFileSync(0, 'utf8'));
const size = input.prompt === 'big' ? Number(process.env.MEDIAHOOK_TEST_BYTES) : 20000;
const bytes = require('node:crypto').randomBytes(size);
bytes.set([0xff, 0xd8, 0xff, 0xe0], 0);
bytes.set([0xff, 0xd9], size - 2);
fs.writeFileSync(input.output_path, bytes);
if (input.prompt === 'big') fs.appendFileSync(process.env.MEDIAHOOK_TEST_MARKS, process.ppid + '\\n');
`;

/** Regular files under `dir`, at any depth. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.skipIf(problem !== undefined && process.env.CI !== 'true').each(['postgres', 's3'] as const)(
  'scale-out with --blobs %s and no shared disk',
  (kind) => {
    const schema = `scale_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const db = `${POSTGRES_URL}?schema=${schema}`;
    const processes: ServeProcess[] = [];
    const dataDirs: string[] = [];
    let dir: string;
    let marks: string;
    let s3: S3Server | undefined;
    let env: Record<string, string>;
    let blobsFlag: string;
    let receiving: TempReceiving;
    let api: ServeProcess;
    let store: Store;
    let blobs: BlobStore;

    const post = async (body: Record<string, unknown>) => {
      const response = await request(`${api.url}v1/operations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'image', family: 'A', webhook_url: `${receiving.url}/hook`, ...body }),
      });
      expect(response.statusCode).toBe(202);
      return ((await response.body.json()) as { id_gen: string }).id_gen;
    };
    const worker = async () => {
      const data = await mkdtemp(join(dir, 'worker-'));
      dataDirs.push(data);
      const args = ['--db', db, '--data', data, '--blobs', blobsFlag, '--allow-private-urls'];
      const started = await startWorkerProcess(
        [...args, '--secret', SECRET, '--lease', '2s', '--generator-command', `node ${join(dir, 'gen.cjs')}`],
        env,
      );
      processes.push(started);
      return started;
    };
    const resultKeys = async (ids: string[]) =>
      (
        await Promise.all(ids.map(async (id) => (await store.getOperationRecord('default', id))?.result?.key))
      ).sort();
    const keptKeys = async () => {
      const keys: string[] = [];
      for await (const key of blobs.keys()) keys.push(key);
      return keys.sort();
    };
    const deliveredOnce = (ids: string[]) => {
      const perId = new Map<string, number>();
      for (const o of receiving.outcomes) {
        if (o.verdict === 'accepted') perId.set(o.callback!.id_gen, (perId.get(o.callback!.id_gen) ?? 0) + 1);
      }
      expect(receiving.outcomes.filter((o) => o.verdict !== 'accepted')).toEqual([]);
      expect(ids.map((id) => perId.get(id))).toEqual(ids.map(() => 1));
    };

    beforeAll(async () => {
      if (problem) throw new Error(`PostgreSQL is required when CI=true: ${problem}`);
      dir = await mkdtemp(join(tmpdir(), 'mediahook-scale-'));
      marks = join(dir, 'marks');
      await writeFile(marks, '');
      await writeFile(join(dir, 'gen.cjs'), GENERATOR);
      await chmod(join(dir, 'gen.cjs'), 0o600);
      env = { MEDIAHOOK_TEST_MARKS: marks, MEDIAHOOK_TEST_BYTES: String(24 * 1024 * 1024) };
      blobsFlag = 'postgres';
      if (kind === 's3') {
        s3 = await startS3Server();
        env = { ...env, ...s3.env };
        blobsFlag = `s3://${S3_BUCKET}/scale-${randomBytes(4).toString('hex')}`;
      }
      receiving = await startTempReceiving(SECRET);
      const apiData = await mkdtemp(join(dir, 'api-'));
      dataDirs.push(apiData);
      api = await startServeProcess(
        ['--no-worker', '--db', db, '--data', apiData, '--blobs', blobsFlag],
        env,
      );
      processes.push(api);
      await worker();
      await worker();
      store = openStore(db);
      blobs = s3
        ? await S3BlobStore.open(blobsFlag, { endpoint: s3.endpoint, credentials: S3_CREDENTIALS })
        : await openBlobStore(blobsFlag, { dataDir: dir, db });
    }, 60_000);

    afterAll(async () => {
      for (const p of processes) if (p.child.exitCode === null) p.child.kill('SIGTERM');
      await Promise.all(processes.map((p) => p.exited));
      await store?.close();
      await blobs?.close();
      await receiving?.close();
      await s3?.close();
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
      await rm(dir, { recursive: true, force: true });
    });

    it('delivers every callback once, serves results from the store, keeps no file in any --data', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        ids.push(
          await post(i % 4 === 3 ? { prompt: `p${i}`, fail_with: `failure ${i}` } : { prompt: `p${i}` }),
        );
      }
      await receiving.waitFor(ids, 60_000);
      deliveredOnce(ids);
      const succeeded = ids.filter((_, i) => i % 4 !== 3);
      const sent = new Map(
        receiving.outcomes.flatMap((o) =>
          o.callback?.event === 'success' ? [[o.callback.id_gen, o.callback.file.path!] as const] : [],
        ),
      );
      for (const id of succeeded) {
        const answer = await request(`${api.url}v1/operations/${id}/result`);
        expect(answer.statusCode).toBe(200);
        expect(Buffer.from(await answer.body.arrayBuffer()).equals(await readFile(sent.get(id)!))).toBe(true);
      }
      expect(await keptKeys()).toEqual(await resultKeys(succeeded));
      for (const data of dataDirs) expect(await filesUnder(join(data, 'results'))).toEqual([]);
    }, 90_000);

    it('delivers a result handed in to the API, sent by a worker that never had it', async () => {
      const file = randomBytes(3 * 1024 * 1024);
      file.set([0xff, 0xd8, 0xff, 0xe0], 0);
      const body = new FormData();
      body.append('webhook_url', `${receiving.url}/hook`);
      body.append('family', 'B');
      body.append('id_gen', `handed-in-${kind}`);
      body.append('result', new Blob([file]), 'render.jpg');
      const answer = await request(`${api.url}v1/callbacks`, { method: 'POST', body });
      expect(answer.statusCode).toBe(202);
      expect(await answer.body.json()).toMatchObject({ kind: 'external', state: 'succeeded' });
      await receiving.waitFor([`handed-in-${kind}`], 60_000);
      deliveredOnce([`handed-in-${kind}`]);
      const sent = receiving.outcomes.find((o) => o.callback?.id_gen === `handed-in-${kind}`)!.callback!;
      expect(sent.event === 'success' && (await readFile(sent.file.path!)).equals(file)).toBe(true);
      for (const data of dataDirs) expect(await filesUnder(join(data, 'results'))).toEqual([]);
    }, 60_000);

    it('loses nothing when a worker is killed while it uploads a result, and leaves no blob', async () => {
      const before = await keptKeys();
      const id = await post({ prompt: 'big' });
      await until('the generator to finish', async () => (await readFile(marks, 'utf8')).trim() !== '');
      const pid = Number((await readFile(marks, 'utf8')).trim().split('\n')[0]);
      await until('the upload to be under way', () => uploading(kind, schema, s3));
      const victim = processes.find((p) => p.child.pid === pid)!;
      victim.child.kill('SIGKILL');
      await victim.exited;
      await worker(); // a machine coming back in its place
      await receiving.waitFor([id], 60_000);
      deliveredOnce([id]);
      expect((await store.getOperationRecord('default', id))?.runs).toBe(2);
      expect(await keptKeys()).toEqual([...before, ...(await resultKeys([id]))].sort());
      if (kind === 'postgres') expect(await chunkCount(schema)).toBe(await storedChunkCount(schema));
      for (const data of dataDirs) expect(await filesUnder(join(data, 'results'))).toEqual([]);
    }, 90_000);
  },
);

/** Whether a result is being written to the blob store right now. */
async function uploading(
  kind: 'postgres' | 's3',
  schema: string,
  s3: S3Server | undefined,
): Promise<boolean> {
  if (kind === 's3') return (await s3!.partsStored()) > 0;
  return (await chunkCount(schema, true)) > 0;
}

/** Chunk rows of result files, committed or (with `uncommitted`) being written. */
async function chunkCount(schema: string, uncommitted = false): Promise<number> {
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  try {
    if (uncommitted) {
      const { rows } = await admin.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE $1 AND state <> 'idle'`,
        [`INSERT INTO ${schema}.result_chunks%`],
      );
      return Number(rows[0]!.n);
    }
    const { rows } = await admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.result_chunks`);
    return Number(rows[0]!.n);
  } finally {
    await admin.end();
  }
}

/** Chunks the kept files say they have. */
async function storedChunkCount(schema: string): Promise<number> {
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ n: string }>(
      `SELECT coalesce(sum(chunks), 0) AS n FROM ${schema}.result_files`,
    );
    return Number(rows[0]!.n);
  } finally {
    await admin.end();
  }
}
