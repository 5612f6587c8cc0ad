/**
 * The generation worker around a user's program, on a real SQLite store: every bad outcome
 * ends the operation as failed (its error callback queued), nothing is left in the scratch
 * space, and what a dead process left there is cleared at the next start.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DirectoryBlobStore } from '../../../src/delivery/index.ts';
import { GenerationWorker } from '../../../src/service/generation-worker.ts';
import { CommandGenerator, type Generator } from '../../../src/service/generators/index.ts';
import { openStore, type Store } from '../../../src/store/index.ts';
import { temporaryDirectory } from './media-probe.ts';
import { eventually, isAlive } from './process-probe.ts';

const FAKE_MODEL = fileURLToPath(new URL('./fixtures/fake-model.mjs', import.meta.url));
const fakeModel = (mode: string): Generator =>
  new CommandGenerator({ command: [process.execPath, FAKE_MODEL, mode], killGraceMs: 300 });
const HOST =
  hostname()
    .replace(/[^A-Za-z0-9]/g, '_')
    .slice(0, 64) || 'host';
const ID_GEN = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d';

describe('GenerationWorker', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let store: Store;
  let worker: GenerationWorker | undefined;
  let errors: unknown[];

  beforeEach(async () => {
    dir = await temporaryDirectory();
    store = openStore(join(dir.path, 'mediahook.sqlite'));
    await store.migrate();
    errors = [];
  });
  afterEach(async () => {
    await worker?.stop(0);
    worker = undefined;
    await store.close();
    await dir.remove();
  });

  function startWorker(generator: Generator, workDir = join(dir.path, 'work')): Promise<void> {
    worker = new GenerationWorker({
      store,
      blobs: new DirectoryBlobStore(join(dir.path, 'results')),
      generator,
      workDir,
      onError: (error) => errors.push(error),
    });
    return worker.start();
  }

  async function createOperation(): Promise<void> {
    await store.createOperation({
      id_gen: ID_GEN,
      client: 'default',
      kind: 'image',
      family: 'A',
      webhook_url: 'http://127.0.0.1:9/hook',
      prompt: 'a red fox',
    });
  }

  async function finished(): Promise<{ state: string; callback: string; message?: string }> {
    for (;;) {
      const operation = await store.getOperation('default', ID_GEN);
      if (operation && operation.state !== 'queued' && operation.state !== 'running') {
        const record = await store.getOperationRecord('default', ID_GEN);
        return {
          state: operation.state,
          callback: operation.callback.state,
          ...(record?.error_message ? { message: record.error_message } : {}),
        };
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  it('fails the operation of a program that writes a directory, and leaves nothing behind', async () => {
    await startWorker(fakeModel('directory'));
    await createOperation();
    expect(await finished()).toEqual({
      state: 'failed',
      callback: 'pending',
      message: 'the generator left something that is not a regular file',
    });
    // The scratch folder goes just after the outcome is stored, not before.
    expect(await eventually(async () => (await readdir(join(dir.path, 'work'))).length === 0)).toBe(true);
  });

  it('fails the operation with a plain message when its scratch folder cannot be made', async () => {
    const notADirectory = join(dir.path, 'file');
    await writeFile(notADirectory, 'x');
    await startWorker(fakeModel('echo'), join(notADirectory, 'work'));
    await createOperation();
    expect(await finished()).toEqual({
      state: 'failed',
      callback: 'pending',
      message: 'the service could not complete the generation',
    });
    expect(errors).toHaveLength(1);
  });

  it('removes the scratch folders of dead processes on this host when it starts', async () => {
    const work = join(dir.path, 'work');
    const deadPid = spawnSync(process.execPath, ['-e', '']).pid;
    const stale = `op-${HOST}-${deadPid}-0badf00d-abcdef`;
    const ofThisProcessBefore = `op-${HOST}-${process.pid}-0badf00d-abcdef`;
    const live = `op-${HOST}-${process.ppid}-0badf00d-abcdef`;
    const otherHost = `op-elsewhere-${deadPid}-0badf00d-abcdef`;
    for (const name of [stale, ofThisProcessBefore, live, otherHost]) {
      await mkdir(join(work, name, 'partial'), { recursive: true });
    }
    await startWorker(fakeModel('echo'));
    expect((await readdir(work)).sort()).toEqual([live, otherHost].sort());
  });

  it('stops at once when asked while it asks the store what is due next', async () => {
    let asked!: () => void;
    const askedOnce = new Promise<void>((resolve) => (asked = resolve));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The store, but for nextDueAt, which waits until released: a stop arrives meanwhile.
    const slow = new Proxy(store, {
      get(target, name) {
        if (name === 'nextDueAt') {
          return async (...args: Parameters<Store['nextDueAt']>) => {
            asked();
            await held;
            return target.nextDueAt(...args);
          };
        }
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    worker = new GenerationWorker({
      store: slow,
      blobs: new DirectoryBlobStore(join(dir.path, 'results')),
      generator: fakeModel('echo'),
      workDir: join(dir.path, 'work'),
    });
    await worker.start();
    await askedOnce;
    const stopping = worker.stop(0).then(() => 'stopped');
    release();
    // Nothing is due: a loop that missed the stop would sleep for a minute before it looked again.
    const late = new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 10_000).unref());
    expect(await Promise.race([stopping, late])).toBe('stopped');
  });

  it('on stop, kills a program still running and leaves the operation to run again', async () => {
    await startWorker(fakeModel('hang'));
    await createOperation();
    const work = join(dir.path, 'work');
    const pidsFile = async () => {
      for (const name of await readdir(work).catch(() => [] as string[])) {
        const text = await readFile(join(work, name, `${ID_GEN}.jpg.pids`), 'utf8').catch(() => '');
        if (text) return Number(text);
      }
      return undefined;
    };
    expect(await eventually(async () => (await pidsFile()) !== undefined, 10_000)).toBe(true);
    const pid = (await pidsFile())!;
    await worker!.stop(0);
    worker = undefined;
    expect(isAlive(pid)).toBe(false);
    expect((await store.getOperation('default', ID_GEN))?.state).toBe('queued');
    expect(await readdir(work)).toEqual([]);
  });
});
