/**
 * Scale-out on PostgreSQL: an API-only `serve --no-worker` and two `worker` processes share one
 * database; every operation is generated and its callback delivered, once.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/index.ts';
import { BIN } from '../../../mediahook/test/cli/helpers.ts';
import { POSTGRES_URL, probePostgres } from '../store/backends.ts';
import { listen, type Receiving, SECRET, startReceiving } from './service-harness.ts';

const problem = await probePostgres();
if (problem && process.env.CI !== 'true') {
  console.warn(`service on PostgreSQL: SKIPPING, PostgreSQL is unreachable (${problem})`);
}

function start(
  args: string[],
  ready: RegExp,
): Promise<{ child: ChildProcessWithoutNullStreams; match: RegExpExecArray; stdout: () => string }> {
  const child = spawn(BIN, args, { stdio: 'pipe' });
  // Its NDJSON log, read as it comes: an undrained pipe would block the process once full.
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
      const match = ready.exec(stderr);
      if (match) resolve({ child, match, stdout: () => stdout });
    });
    child.on('exit', (code) => reject(new Error(`${args[0]} exited ${code}: ${stderr}`)));
  });
}

describe.skipIf(problem !== undefined && process.env.CI !== 'true')(
  'the service on PostgreSQL with two workers',
  () => {
    const schema = `service_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const db = `${POSTGRES_URL}?schema=${schema}`;
    const children: ChildProcessWithoutNullStreams[] = [];
    let data: string;
    let out: string;
    let receiving: Receiving;
    let apiUrl: string;
    let store: Store;

    beforeAll(async () => {
      if (problem) throw new Error(`PostgreSQL is required when CI=true: ${problem}`);
      data = await mkdtemp(join(tmpdir(), 'mediahook-pg-service-'));
      out = await mkdtemp(join(tmpdir(), 'mediahook-pg-received-'));
      receiving = await startReceiving(out, SECRET);
      const api = await start(
        ['serve', '--no-worker', '--db', db, '--data', data, '--port', '0'],
        /listening at (\S+)/,
      );
      children.push(api.child);
      apiUrl = api.match[1]!.replace(/\/$/, '');
      const workerArgs = ['worker', '--db', db, '--data', data, '--allow-private-urls', '--secret', SECRET];
      for (let i = 0; i < 2; i++) children.push((await start(workerArgs, /running on postgres/)).child);
      store = openStore(db);
    }, 60_000);

    afterAll(async () => {
      for (const child of children) child.kill('SIGTERM');
      await Promise.all(
        children.map((child) =>
          child.exitCode === null ? new Promise((resolve) => child.on('exit', resolve)) : null,
        ),
      );
      await store?.close();
      await receiving?.listen.close();
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
      await rm(data, { recursive: true, force: true });
      await rm(out, { recursive: true, force: true });
    });

    it('generates and delivers every operation once', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) {
        const body =
          i % 2 === 0
            ? { kind: 'image', family: i % 4 === 0 ? 'A' : 'B', prompt: `picture ${i}` }
            : { kind: 'image', family: 'A', prompt: `failing ${i}`, fail_with: `failure ${i}` };
        const response = await request(`${apiUrl}/v1/operations`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ...body, webhook_url: `${receiving.url}/hook` }),
        });
        expect(response.statusCode).toBe(202);
        ids.push(((await response.body.json()) as { id_gen: string }).id_gen);
      }
      await receiving.waitFor(ids, 90_000);
      const perId = new Map<string, number>();
      for (const outcome of receiving.outcomes) {
        const id = outcome.callback?.id_gen;
        if (id) perId.set(id, (perId.get(id) ?? 0) + 1);
      }
      expect(ids.map((id) => perId.get(id))).toEqual(ids.map(() => 1));
      expect(receiving.outcomes.filter((o) => o.verdict === 'rejected')).toEqual([]);
      const workers = new Set<string>();
      for (const id of ids) {
        const operation = await store.getOperation('default', id);
        expect(operation?.callback.state).toBe('delivered');
        const attempts = await store.listAttempts(id);
        expect(attempts).toHaveLength(1);
        workers.add(attempts[0]!.worker_id ?? '');
      }
      // Which worker takes what is up to the race; both being alive is what matters here.
      expect(workers.size).toBeGreaterThanOrEqual(1);
      expect(children.every((child) => child.exitCode === null)).toBe(true);
    }, 120_000);

    it('answers text PostgreSQL cannot hold (U+0000) with 4xx, never 500', async () => {
      const call = async (method: string, path: string, body?: unknown) => {
        const response = await request(`${apiUrl}${path}`, {
          method,
          headers: { 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const answer = (await response.body.json()) as { error: { code: string } };
        return [response.statusCode, answer.error.code];
      };
      const create = { kind: 'image', family: 'A', webhook_url: `${receiving.url}/hook`, prompt: 'p' };
      expect(await call('POST', '/v1/operations', { ...create, prompt: 'a\u0000b' })).toEqual([
        400,
        'invalid_request',
      ]);
      expect(await call('POST', '/v1/operations', { ...create, status: '\u0000' })).toEqual([
        400,
        'invalid_request',
      ]);
      expect(await call('GET', '/v1/operations/a%00b')).toEqual([404, 'not_found']);
      expect(await call('POST', '/v1/operations/a%00b/redeliver')).toEqual([404, 'not_found']);
      expect(await call('GET', '/v1/operations?before=%00')).toEqual([400, 'invalid_request']);
      expect(await call('GET', '/v1/operations?endpoint=%00')).toEqual([400, 'invalid_request']);
    });

    it('records an answer whose body holds NUL bytes, and the callback is delivered', async () => {
      const binary = createServer((req, res) => {
        req.resume();
        req.on('end', () => res.end(Buffer.from([0x6f, 0x6b, 0x00, 0x21])));
      });
      const url = await listen(binary);
      try {
        const response = await request(`${apiUrl}/v1/operations`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ kind: 'image', family: 'A', webhook_url: `${url}/hook`, prompt: 'nul' }),
        });
        const id = ((await response.body.json()) as { id_gen: string }).id_gen;
        let state: string | undefined;
        for (let i = 0; i < 600 && state !== 'delivered'; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          state = (await store.getOperation('default', id))?.callback.state;
        }
        expect(state).toBe('delivered');
        expect(await store.listAttempts(id)).toMatchObject([
          { status_code: 200, response_head: 'ok\uFFFD!' },
        ]);
      } finally {
        binary.closeAllConnections();
        binary.close();
      }
    }, 90_000);

    it('logs a lost database connection as a JSON line on stdout, like the rest of its log', async () => {
      const worker = await start(['worker', '--db', db, '--data', data], /running on postgres/);
      children.push(worker.child);
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      try {
        // Only this schema's listeners: other tests share the database.
        const channel = `%LISTEN "mediahook_work_${schema}"%`;
        const killed = await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()`,
          [channel],
        );
        expect(killed.rowCount).toBeGreaterThan(0);
      } finally {
        await admin.end();
      }
      for (let i = 0; i < 100 && !worker.stdout().includes('store_background_error'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const lines = worker
        .stdout()
        .split('\n')
        .filter((line) => line !== '');
      expect(lines.some((line) => line.includes('"event":"store_background_error"'))).toBe(true);
      for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    }, 60_000);
  },
);
