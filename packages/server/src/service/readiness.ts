/**
 * `GET /readyz`: whether this process can serve now, by the dependencies every request needs
 * (the database and the blob store), each probed at most every {@link PROBE_EVERY_MS} however
 * often a load balancer asks. `/healthz` stays liveness: it answers while the process runs.
 */
import { type BlobStore, probeBlobStore } from '../delivery/index.ts';
import type { Store } from '../store/index.ts';

/** How long a probe's verdict stands before the next request probes again. */
const PROBE_EVERY_MS = 2000;
/** A probe with no answer by then counts as failed: a stopped dependency often hangs. */
const PROBE_TIMEOUT_MS = 5000;

/** `/readyz`'s answer: each check's `ok` or what failed. */
export interface Readiness {
  ready: boolean;
  checks: { database: string; blobs: string };
}

/** `ok`, or the first line of what `probe` threw (or that it did not answer in time). */
async function verdictOf(probe: (signal: AbortSignal) => Promise<unknown>): Promise<string> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`no answer within ${PROBE_TIMEOUT_MS / 1000} s`);
      controller.abort(error);
      reject(error);
    }, PROBE_TIMEOUT_MS);
  });
  try {
    await Promise.race([probe(controller.signal), late]);
    return 'ok';
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    return text.split('\n')[0]!.trim() || (error as Error).name || 'failed';
  } finally {
    clearTimeout(timer);
  }
}

/** A probe run at most once per {@link PROBE_EVERY_MS}: callers in between share its verdict. */
function throttled(probe: (signal: AbortSignal) => Promise<unknown>): () => Promise<string> {
  let last: { at: number; verdict: Promise<string> } | undefined;
  return () => {
    if (last === undefined || Date.now() - last.at >= PROBE_EVERY_MS) {
      const verdict = verdictOf(probe);
      const entry = { at: Number.POSITIVE_INFINITY, verdict };
      last = entry;
      // The interval counts from the verdict: a slow probe is not started again while it runs.
      void verdict.then(() => (entry.at = Date.now()));
    }
    return last.verdict;
  };
}

/**
 * The readiness of a process using `store` and `blobs`, as `/readyz` reports it.
 *
 * @example
 * const ready = readinessOf(store, blobs);
 * const { ready: ok, checks } = await ready(); // { ready: true, checks: { database: 'ok', blobs: 'ok' } }
 */
export function readinessOf(store: Store, blobs: BlobStore): () => Promise<Readiness> {
  // Any read proves the database answers; counting the API keys is the smallest one there is.
  const database = throttled(() => store.countApiKeys());
  const blobStore = throttled((signal) => probeBlobStore(blobs, signal));
  return async () => {
    const [databaseVerdict, blobsVerdict] = await Promise.all([database(), blobStore()]);
    return {
      ready: databaseVerdict === 'ok' && blobsVerdict === 'ok',
      checks: { database: databaseVerdict, blobs: blobsVerdict },
    };
  };
}
