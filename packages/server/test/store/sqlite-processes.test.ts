/**
 * SQLite across processes: each process has its own connection to the file, so only the
 * write transaction (BEGIN IMMEDIATE) and the busy timeout keep two of them from claiming
 * the same callback. Within one process the store shares one connection (the main suite).
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/index.ts';
import { finishedOperations } from './helpers.ts';

const CLAIMER = fileURLToPath(new URL('sqlite-claimer.ts', import.meta.url));
let dir: string | undefined;

afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** A claimer process and the lines it printed so far. */
function startClaimer(path: string, worker: string) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [
    '--import',
    'tsx',
    CLAIMER,
    path,
    worker,
  ]);
  let output = '';
  let errors = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    errors += chunk;
  });
  const exited = once(child, 'exit').then(([code]) => {
    if (code !== 0) throw new Error(`claimer ${worker} exited ${code}: ${errors}`);
    return JSON.parse(output.split('\n')[1] ?? '') as string[];
  });
  const ready = (async () => {
    while (!output.startsWith('ready\n')) {
      if (child.exitCode !== null) throw new Error(`claimer ${worker} exited early: ${errors}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return { ready, go: () => child.stdin.end('go\n'), exited };
}

it('never hands one callback to two processes claiming from the same file', async () => {
  dir = mkdtempSync(join(tmpdir(), 'mediahook-store-'));
  const path = join(dir, 'store.sqlite');
  const store = new SqliteStore(path);
  await store.migrate();
  const ids = await finishedOperations(store, 300);
  await store.close();

  const claimers = ['p1', 'p2', 'p3'].map((worker) => startClaimer(path, worker));
  await Promise.all(claimers.map((c) => c.ready));
  for (const claimer of claimers) claimer.go();
  const claimed = await Promise.all(claimers.map((c) => c.exited));

  const all = claimed.flat();
  expect(new Set(all).size).toBe(all.length);
  expect(all.sort()).toEqual([...ids].sort());
  // They did race: more than one process got work.
  expect(claimed.filter((c) => c.length > 0).length).toBeGreaterThan(1);
});
