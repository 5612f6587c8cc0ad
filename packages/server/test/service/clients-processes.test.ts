/**
 * Clients across processes on one PostgreSQL: a key revoked through one `serve` is refused by
 * another within 5 s; and a run given its database password and signing secret in the
 * environment shows neither in `ps` (/proc/PID/cmdline) nor in its logs.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshSchema, tempDir } from '../../../../test/support/processes.ts';
import { createApiKey } from '../../src/service/clients/api-keys.ts';
import { openStore } from '../../src/store/index.ts';
import { POSTGRES_URL, probePostgres } from '../store/backends.ts';
import {
  SECRET,
  type ServeProcess,
  startServeProcess,
  startTempReceiving,
  type TempReceiving,
} from './service-harness.ts';

const problem = await probePostgres();
const PASSWORD = 'pw-never-shown-4f1c';

describe.skipIf(problem !== undefined && process.env.CI !== 'true')('clients across processes', () => {
  const schema = freshSchema('clients_processes');
  const url = new URL(POSTGRES_URL);
  // The server trusts loopback: the password is never asked for, only carried.
  url.password = PASSWORD;
  url.searchParams.set('schema', schema.schema);
  const db = url.href;
  const env = { MEDIAHOOK_DB: db, MEDIAHOOK_SECRET: SECRET };
  const serves: ServeProcess[] = [];
  const dirs: { remove(): Promise<void> }[] = [];
  let receiving: TempReceiving;
  let admin: Record<string, string>;

  beforeAll(async () => {
    if (problem) throw new Error(`PostgreSQL is required when CI=true: ${problem}`);
    const store = openStore(db);
    try {
      await store.migrate();
      const { created } = await createApiKey(store, { client: 'default', role: 'admin' });
      admin = { authorization: `Bearer ${created.key}`, 'content-type': 'application/json' };
    } finally {
      await store.close();
    }
    receiving = await startTempReceiving(SECRET);
    for (const args of [['--allow-private-urls'], ['--no-worker']]) {
      const dir = await tempDir('clients-serve');
      dirs.push(dir);
      serves.push(await startServeProcess(['--data', dir.path, ...args], env));
    }
  }, 60_000);

  afterAll(async () => {
    for (const serve of serves) serve.child.kill('SIGTERM');
    await Promise.all(serves.map((serve) => serve.exited));
    await receiving?.close();
    for (const dir of dirs) await dir.remove();
    await schema.drop();
  });

  it('refuses a key revoked through one process in another within 5 s', async () => {
    const [first, second] = serves as [ServeProcess, ServeProcess];
    const made = await fetch(new URL('/v1/keys', first.url), {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ client: 'acme' }),
    });
    const { key, key_id } = (await made.json()) as { key: string; key_id: string };
    const asAcme = { authorization: `Bearer ${key}` };
    expect((await fetch(new URL('/v1/operations', second.url), { headers: asAcme })).status).toBe(200);
    const revoked = await fetch(new URL(`/v1/keys/${key_id}`, first.url), {
      method: 'DELETE',
      headers: admin,
    });
    expect(revoked.status).toBe(204);
    const deadline = Date.now() + 5_000;
    let status = 200;
    while (status !== 401 && Date.now() < deadline) {
      status = (await fetch(new URL('/v1/operations', second.url), { headers: asAcme })).status;
      if (status !== 401) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(401);
  });

  it('keeps the secret and the database password out of ps and the logs', async () => {
    const [first] = serves as [ServeProcess];
    const created = await fetch(new URL('/v1/operations', first.url), {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ kind: 'image', family: 'A', prompt: 'p', webhook_url: `${receiving.url}/hook` }),
    });
    const { id_gen } = (await created.json()) as { id_gen: string };
    // Accepted by a receiver that requires SECRET: the environment's secret signed it.
    await receiving.waitFor([id_gen]);
    // The attempt is logged once recorded, just after the receiver's answer.
    await expect.poll(() => serves[0]!.stdout(), { timeout: 10_000 }).toContain('delivery_attempt');
    for (const serve of serves) {
      const cmdline = await readFile(`/proc/${serve.child.pid}/cmdline`, 'utf8');
      const seen = [cmdline, serve.stdout(), serve.stderr()].join('\n');
      expect(seen).toContain('listening at');
      for (const secret of [PASSWORD, SECRET, db]) expect(seen).not.toContain(secret);
    }
  });
});
