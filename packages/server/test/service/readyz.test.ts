/**
 * `GET /readyz` of a running `mediahook serve`: 200 with every check `ok`, 503 naming the check
 * that fails while a dependency is down (the blob directory gone, s3rver stopped, the
 * PostgreSQL connection cut at a proxy), and 200 again once it is back. Open like `/healthz`.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import S3rver from 's3rver';
import { request } from 'undici';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { BIN } from '../../../mediahook/test/cli/helpers.ts';
import { S3_BUCKET, S3_CREDENTIALS } from '../blobs/s3-server.ts';
import { DirectoryBlobStore } from '../../src/delivery/index.ts';
import { readinessOf } from '../../src/service/readiness.ts';
import { openStore } from '../../src/store/index.ts';
import { POSTGRES_URL } from '../store/backends.ts';

interface Readiness {
  status: number;
  body: { ready: boolean; checks: { database: string; blobs: string } };
}

const running = new Set<ChildProcessWithoutNullStreams>();
afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

/** `mediahook serve --port 0 …`, until it prints where it listens. */
async function serve(args: string[], env: Record<string, string> = {}): Promise<string> {
  const child = spawn(BIN, ['serve', '--port', '0', ...args], {
    env: { ...process.env, AWS_EC2_METADATA_DISABLED: 'true', ...env },
  });
  running.add(child);
  child.stdout.resume();
  let stderr = '';
  child.stderr.setEncoding('utf8');
  for await (const chunk of child.stderr) {
    stderr += chunk as string;
    const match = /listening at (http:\/\/\S+)\//.exec(stderr);
    if (match) return match[1]!;
  }
  throw new Error(`serve exited before listening: ${stderr}`);
}

async function readyz(url: string): Promise<Readiness> {
  const answer = await request(`${url}/readyz`);
  return { status: answer.statusCode, body: (await answer.body.json()) as Readiness['body'] };
}

/** Asks until the answer's status is `status` (the verdicts stand for up to 2 s each). */
async function readyzUntil(url: string, status: number): Promise<Readiness> {
  for (;;) {
    const answer = await readyz(url);
    if (answer.status === status) return answer;
    await sleep(250);
  }
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mediahook-readyz-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A TCP proxy to `target` on a port of its own, which can be cut (every connection dropped) and mended. */
async function tcpProxy(target: { host: string; port: number }): Promise<{
  port: number;
  cut(): Promise<void>;
  mend(): Promise<void>;
  close(): Promise<void>;
}> {
  const sockets = new Set<Socket>();
  const make = (): Server =>
    createServer((client) => {
      const upstream = connect(target.port, target.host);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
  let server = make().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const cut = async () => {
    const closed = once(server, 'close');
    server.close();
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return {
    port,
    cut,
    async mend() {
      server = make().listen(port, '127.0.0.1');
      await once(server, 'listening');
    },
    close: async () => {
      if (server.listening) await cut();
    },
  };
}

describe('readinessOf', () => {
  it('probes each dependency once for the requests that come within its interval', async () => {
    const dir = await tempDir();
    const store = openStore(join(dir, 'mediahook.sqlite'));
    await store.migrate();
    onTestFinished(() => store.close());
    const directory = new DirectoryBlobStore(join(dir, 'results'));
    let puts = 0;
    // The real directory store, counting the probe files written through it.
    const blobs = new Proxy(directory, {
      get(target, name, receiver) {
        if (name === 'put') puts += 1;
        const value = Reflect.get(target, name, receiver) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const ready = readinessOf(store, blobs);
    const answers = await Promise.all([ready(), ready(), ready()]);
    answers.push(await ready());
    for (const answer of answers)
      expect(answer).toEqual({ ready: true, checks: { database: 'ok', blobs: 'ok' } });
    expect(puts).toBe(1);
  });
});

describe('GET /readyz', () => {
  it('is 200 with each check ok, 503 naming the blob directory while it is gone, then 200 again', async () => {
    const data = await tempDir();
    const url = await serve(['--data', data]);
    expect(await readyz(url)).toEqual({
      status: 200,
      body: { ready: true, checks: { database: 'ok', blobs: 'ok' } },
    });
    // A file where the directory was: nothing can be written under it (even as root).
    await rename(join(data, 'results'), join(data, 'results-away'));
    await writeFile(join(data, 'results'), '');
    const down = await readyzUntil(url, 503);
    expect(down.body.ready).toBe(false);
    expect(down.body.checks.database).toBe('ok');
    expect(down.body.checks.blobs).toMatch(/ENOTDIR|EEXIST|not a directory/);
    await rm(join(data, 'results'));
    await rename(join(data, 'results-away'), join(data, 'results'));
    expect((await readyzUntil(url, 200)).body).toEqual({
      ready: true,
      checks: { database: 'ok', blobs: 'ok' },
    });
    // Open like /healthz, and GET only.
    const posted = await request(`${url}/readyz`, { method: 'POST' });
    await posted.body.dump();
    expect(posted.statusCode).toBe(405);
  });

  it('is 503 naming the blobs while the S3 store is stopped, and 200 once it is back', async () => {
    const data = await tempDir();
    const s3Dir = await tempDir();
    const start = async (port: number) => {
      const server = new S3rver({
        address: '127.0.0.1',
        port,
        silent: true,
        directory: s3Dir,
        configureBuckets: [{ name: S3_BUCKET }],
      });
      return { server, port: (await server.run()).port };
    };
    let s3 = await start(0);
    onTestFinished(() => s3.server.close());
    const url = await serve(['--data', data, '--blobs', `s3://${S3_BUCKET}/readyz`], {
      AWS_ENDPOINT_URL: `http://127.0.0.1:${s3.port}`,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
    });
    expect((await readyz(url)).status).toBe(200);
    await s3.server.close();
    const down = await readyzUntil(url, 503);
    expect(down.body.checks).toEqual({ database: 'ok', blobs: expect.not.stringMatching(/^ok$/) });
    s3 = await start(s3.port);
    expect((await readyzUntil(url, 200)).body.checks).toEqual({ database: 'ok', blobs: 'ok' });
  });

  it('is 503 naming the database while its connections are cut, and 200 once they can be made again', async () => {
    const data = await tempDir();
    const target = new URL(POSTGRES_URL);
    const schema = `readyz_${process.pid}_${randomBytes(4).toString('hex')}`;
    onTestFinished(async () => {
      const admin = new pg.Client({ connectionString: POSTGRES_URL });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    });
    const proxy = await tcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    onTestFinished(() => proxy.close());
    const db = new URL(POSTGRES_URL);
    db.port = String(proxy.port);
    db.searchParams.set('schema', schema);
    const url = await serve(['--data', data, '--db', db.href]);
    expect((await readyz(url)).status).toBe(200);
    await proxy.cut();
    const down = await readyzUntil(url, 503);
    expect(down.body.checks).toEqual({ database: expect.not.stringMatching(/^ok$/), blobs: 'ok' });
    await proxy.mend();
    expect((await readyzUntil(url, 200)).body.checks).toEqual({ database: 'ok', blobs: 'ok' });
  });
});
