/**
 * SQLite WAL checkpoints run in a worker thread with a connection of its own, not inside a
 * commit on the event loop. Pages reach the database file only by a checkpoint, so its size
 * tells whether one ran.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { isStoreError, SqliteStore } from '../../src/store/index.ts';
import { WalCheckpointer } from '../../src/store/sqlite/wal-checkpointer.ts';
import { waitFor } from '../delivery/harness.ts';

let dir: string;
const stores: SqliteStore[] = [];

function open(options: ConstructorParameters<typeof SqliteStore>[1] = {}): SqliteStore {
  dir ??= mkdtempSync(join(tmpdir(), 'mediahook-checkpoint-'));
  const store = new SqliteStore(join(dir, 'store.sqlite'), options);
  stores.push(store);
  return store;
}

afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
  dir = undefined as unknown as string;
});

const pageSize = 4096;
const dbSize = (store: SqliteStore) => statSync(store.path).size;

it('checkpoints from a thread: the database file fills while the store is open', async () => {
  const errors: unknown[] = [];
  const store = open({ checkpointIntervalMs: 20, onBackgroundError: (e) => errors.push(e) });
  await store.migrate();
  await waitFor('a checkpoint', () => dbSize(store) > pageSize);
  expect(errors).toEqual([]);
});

it('leaves checkpoints to SQLite with checkpointIntervalMs 0', async () => {
  const store = open({ checkpointIntervalMs: 0 });
  await store.migrate();
  await new Promise((resolve) => setTimeout(resolve, 200));
  // The migration's few pages are far below SQLite's own threshold (1000 pages).
  expect(dbSize(store)).toBe(pageSize);
});

it('ends the thread on close: the last connection closed removes the WAL', async () => {
  const store = open({ checkpointIntervalMs: 20 });
  await store.migrate();
  expect(existsSync(`${store.path}-wal`)).toBe(true);
  await store.close();
  expect(existsSync(`${store.path}-wal`)).toBe(false);
});

it('survives the file being deleted under it', async () => {
  const errors: unknown[] = [];
  const store = open({ checkpointIntervalMs: 20, onBackgroundError: (e) => errors.push(e) });
  await store.migrate();
  rmSync(dir, { recursive: true, force: true });
  await new Promise((resolve) => setTimeout(resolve, 100));
  // The connection keeps the deleted file: the store still works, and closes.
  expect(await store.queueDepth()).toBeDefined();
  await store.close();
  expect(errors).toEqual([]);
  expect(existsSync(dir)).toBe(false);
});

it('rejects a bad checkpointIntervalMs', () => {
  let error: unknown;
  try {
    open({ checkpointIntervalMs: -1 });
  } catch (e) {
    error = e;
  }
  expect(isStoreError(error) && error.code).toBe('invalid_argument');
});

it('reports a failed thread and says it stopped', async () => {
  dir = mkdtempSync(join(tmpdir(), 'mediahook-checkpoint-'));
  const path = join(dir, 'not-a-database');
  writeFileSync(path, 'x'.repeat(8192));
  const errors: unknown[] = [];
  let stopped = false;
  const checkpointer = new WalCheckpointer(path, {
    intervalMs: 10,
    onError: (e) => errors.push(e),
    onStop: () => {
      stopped = true;
    },
  });
  await waitFor('the thread to stop', () => stopped);
  expect(String(errors[0])).toMatch(/WAL checkpoint thread: file is not a database/);
  await checkpointer.stop();
});

it('does not keep the process alive, under tsx too', async () => {
  dir = mkdtempSync(join(tmpdir(), 'mediahook-checkpoint-'));
  const source = pathToFileURL(join(import.meta.dirname, '../../src/store/index.ts')).href;
  // The store is never closed: the process must end once its work is done, all the same.
  const script = `
    import { statSync } from 'node:fs';
    import { SqliteStore } from ${JSON.stringify(source)};
    const store = new SqliteStore(${JSON.stringify(join(dir, 'store.sqlite'))}, { checkpointIntervalMs: 10 });
    await store.migrate();
    await new Promise((resolve) => setTimeout(resolve, 300));
    console.log(statSync(store.path).size > ${pageSize} ? 'checkpointed' : 'not checkpointed');
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    timeout: 15_000,
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const [code] = await once(child, 'exit');
  expect(output.trim()).toBe('checkpointed');
  expect(code).toBe(0);
});
