/**
 * Who sees what `mediahook listen` received (its inspector is for loopback clients unless
 * --inspector-open), and an --out it cannot write, refused at start.
 */
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { inspectorServes, isLoopbackAddress } from '../../src/web/inspector-access.ts';
import { tempDir } from '../receiver/helpers.ts';
import { runCli } from './helpers.ts';
import { post, startListen } from './listen-helpers.ts';

describe("listen's inspector, by client address", () => {
  it('counts 127.0.0.0/8 and ::1, in any spelling, as loopback, and nothing else', () => {
    for (const address of ['127.0.0.1', '127.8.9.10', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1']) {
      expect(isLoopbackAddress(address), address).toBe(true);
    }
    for (const address of [
      '192.168.1.20',
      '10.0.0.1',
      '::ffff:192.168.1.20',
      'fe80::1',
      '::',
      '0.0.0.0',
      '128.0.0.1',
      'localhost',
      '',
      undefined,
    ]) {
      expect(isLoopbackAddress(address), String(address)).toBe(false);
    }
  });

  it('is shown to loopback clients, and to others only when opened', () => {
    expect(inspectorServes('127.0.0.1', false)).toBe(true);
    expect(inspectorServes('::1', false)).toBe(true);
    expect(inspectorServes('203.0.113.7', false)).toBe(false);
    expect(inspectorServes('2001:db8::7', false)).toBe(false);
    expect(inspectorServes(undefined, false)).toBe(false);
    expect(inspectorServes('203.0.113.7', true)).toBe(true);
  });

  it('bound to every address, says the inspector is for loopback clients and serves one', async () => {
    const out = await tempDir();
    const listener = await startListen(['--host', '0.0.0.0', '--out', out]);
    try {
      expect(listener.stderr()).toContain('inspector for loopback clients only');
      // Reached over loopback only: a test dials no other address.
      const { port } = new URL(listener.url);
      const base = `http://127.0.0.1:${port}`;
      const page = await request(`${base}/`);
      expect(page.statusCode).toBe(200);
      expect(await page.body.text()).toContain('<html');
      const callback = { family: 'A', event: 'error', status: 'error', message: 'oom' } as const;
      const id = 'op-access-1';
      expect((await post(base, { ...callback, id_gen: id, time_gen: new Date().toISOString() })).status).toBe(
        200,
      );
      const recent = await request(`${base}/requests.json`);
      expect(recent.statusCode).toBe(200);
      expect(JSON.stringify(await recent.body.json())).toContain(id);
    } finally {
      await listener.stop();
    }
  });

  it('with --inspector-open, says so', async () => {
    const listener = await startListen(['--out', await tempDir(), '--inspector-open']);
    try {
      expect(listener.stderr()).toContain('inspector open to every client');
      expect((await request(`${listener.url}`)).statusCode).toBe(200);
    } finally {
      await listener.stop();
    }
  });
});

describe('listen with an --out it cannot write', () => {
  async function refused(out: string, user?: { uid: number; gid: number }): Promise<void> {
    const run = await runCli(['listen', '--port', '0', '--out', out], user ? { user } : {});
    expect(run.code).toBe(1);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^mediahook listen: cannot write to --out .+: E[A-Z]+: /);
    expect(run.stderr).not.toContain('receiving at');
  }

  it('exits 1 at start, in one line, when --out is a directory it may not write', async () => {
    const parent = await tempDir();
    await chmod(parent, 0o755);
    const out = join(parent, 'read-only');
    await mkdir(out);
    await chmod(out, 0o555);
    // Root writes whatever the mode: as root, the command runs as nobody, whom the mode binds.
    await refused(out, process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined);
  });

  it('exits 1 at start, in one line, when --out is a file', async () => {
    const file = join(await tempDir(), 'file');
    await writeFile(file, '');
    await refused(file);
  });

  it('exits 1 at start, in one line, when --out is under a file', async () => {
    const file = join(await tempDir(), 'file');
    await writeFile(file, '');
    await refused(join(file, 'callbacks'));
  });

  it('exits 1 at start, in one line, when its receipts cannot be kept in --out', async () => {
    const out = await tempDir();
    await writeFile(join(out, '.mediahook'), '');
    await refused(out);
  });

  it('starts with an --out it makes, and leaves no file of its check behind', async () => {
    const out = join(await tempDir(), 'new', 'callbacks');
    const listener = await startListen(['--out', out]);
    await listener.stop();
    expect(await readdir(out)).toEqual([]);
  });
});
