// The WAL checkpoint thread of a SqliteStore file (started by wal-checkpointer.ts). Plain
// JavaScript: on Node 20 a worker thread cannot load TypeScript, whether the process runs
// under tsx or vitest, so it runs without loaders.
import { statSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

/** @type {{ path: string, intervalMs: number, fullAfterFrames: number, fullWaitMs: number }} */
const { path, intervalMs, fullAfterFrames, fullWaitMs } = workerData;

/** The file's identity, or undefined once it is gone (deleted, or replaced by another file). */
function identity() {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}`;
  } catch (error) {
    if (error?.code === 'ENOENT') return undefined;
    throw error;
  }
}

/** What the parent gets is structured-cloned: a SqliteError would arrive as just `{ code }`. */
function plain(error) {
  if (!(error instanceof Error)) return error;
  return new Error(error.code === undefined ? error.message : `${error.message} (${error.code})`);
}

function guarded(work) {
  try {
    return work();
  } catch (error) {
    throw plain(error);
  }
}

const opened = identity();
// fileMustExist: a file deleted under the store is never created again from here. No busy
// timeout: SQLite's sleeps between tries for the writer lock (1, 2, 5, 10… ms) are too coarse
// to catch it between commits; checkpoint() retries instead.
const db =
  opened === undefined ? undefined : guarded(() => new Database(path, { fileMustExist: true, timeout: 0 }));
let timer;

/** Between checkpoint rounds when the WAL is long, in ms. */
const RETRY_MS = 1;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

function stop() {
  clearInterval(timer);
  db?.close();
  parentPort.close();
}

/** @returns {{ busy: number, log: number, checkpointed: number }} frames in the WAL, and copied. */
function checkpointPass(mode) {
  return db.pragma(`wal_checkpoint(${mode})`)[0];
}

function checkpoint() {
  // Nothing left to checkpoint into: the connection writes to a file nobody can open again.
  if (identity() !== opened) return stop();
  // PASSIVE copies what it can without any lock a writer needs: the main connection never waits.
  let last = checkpointPass('PASSIVE');
  if (last.log < fullAfterFrames) return;
  // A commit restarts the WAL from its start only if every frame was copied before it began;
  // beside steady commits a checkpoint rarely ends so, and the WAL would grow for as long as
  // the load lasts. Short PASSIVE rounds first: one between two commits is enough.
  const until = performance.now() + fullWaitMs;
  while (performance.now() < until) {
    Atomics.wait(sleeper, 0, 0, RETRY_MS);
    const round = checkpointPass('PASSIVE');
    // Restarted (a shorter WAL), or nothing committed since the last round and all copied.
    if (round.log < last.log || (round.log === last.log && round.checkpointed === round.log)) return;
    last = round;
  }
  // Then FULL: it holds the writer lock while it copies the few frames left, and a commit
  // waiting for it waits on the event loop. Without the lock at once, FULL does a PASSIVE pass
  // and reports busy: try again shortly, for a while, else at the next tick.
  const giveUp = performance.now() + fullWaitMs;
  while (checkpointPass('FULL').busy && performance.now() < giveUp) Atomics.wait(sleeper, 0, 0, RETRY_MS);
}

parentPort.on('message', (message) => {
  if (message === 'stop') stop();
});
if (db === undefined) stop();
else timer = setInterval(() => guarded(checkpoint), intervalMs);
