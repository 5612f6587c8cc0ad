// The SHA-256 thread of file-digest.ts: hashes large result files off the event loop, several
// at once, each a job fed in order. Plain JavaScript: on Node 20 a worker thread cannot load
// TypeScript, whether the process runs under tsx or vitest, so it runs without loaders.
import { createHash } from 'node:crypto';
import { parentPort } from 'node:worker_threads';

/** @type {Map<number, import('node:crypto').Hash>} */
const jobs = new Map();

parentPort.on(
  'message',
  /** @param {{ job: number, bytes?: ArrayBuffer, length?: number, end?: boolean, drop?: boolean }} message */
  ({ job, bytes, length, end, drop }) => {
    if (drop) {
      jobs.delete(job);
      return;
    }
    let hash = jobs.get(job);
    if (hash === undefined) {
      hash = createHash('sha256');
      jobs.set(job, hash);
    }
    if (bytes !== undefined) {
      hash.update(new Uint8Array(bytes, 0, length));
      // The buffer goes back to be filled again: left here, hashed batches would pile up until
      // this thread's garbage collector came round, far more memory than the backlog allowed.
      parentPort.postMessage({ job, hashed: length, bytes }, [bytes]);
    }
    if (end) {
      jobs.delete(job);
      parentPort.postMessage({ job, digest: hash.digest('hex') });
    }
  },
);
