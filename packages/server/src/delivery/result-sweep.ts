/**
 * The retention sweep: what the blob store keeps that nothing needs any more goes. A result
 * whose callback is final is kept for the retention period; a file no operation owns (its
 * writer died between keeping it and recording it) and an unfinished multipart upload are
 * removed once they are an hour old, when no writer can still be at work on them.
 */
import { ALL_CLIENTS, FINAL_CALLBACK_STATES, type OutboxStore, type OperationStore } from '../store/index.ts';
import { type BlobStore, idGenOfBlobKey } from './blobs/index.ts';

/** How old a file no operation owns, or an unfinished upload, must be before it is removed. */
const UNOWNED_AFTER_MS = 3_600_000;

interface SweepOptions {
  now: number;
  /** How long result files are kept once their callback is final (24 h). */
  retentionMs?: number | undefined;
  /** Told of each file that could not be removed (it is tried again by the next sweep). */
  onError?: ((error: unknown) => void) | undefined;
}

/**
 * Removes the files no longer needed and aborts stale multipart uploads; returns how many
 * files went. A removal that fails is reported with its key and left for the next sweep.
 *
 * @example
 * setInterval(() => void sweepResults(store, blobs, { now: Date.now() }), 10 * 60_000);
 */
export async function sweepResults(
  store: Pick<OutboxStore, 'getCallback'> & Pick<OperationStore, 'getOperationRecord'>,
  blobs: BlobStore,
  options: SweepOptions,
): Promise<number> {
  const { now, onError } = options;
  const retention = options.retentionMs ?? 24 * 3_600_000;
  let removed = 0;
  for await (const key of blobs.keys()) {
    try {
      if (!(await needed(key))) {
        await blobs.remove(key);
        removed++;
      }
    } catch (error) {
      onError?.(new Error(`the result file ${key} could not be swept: ${String(error)}`, { cause: error }));
    }
  }
  await blobs.abortUploads?.(now - UNOWNED_AFTER_MS).catch((error: unknown) => onError?.(error));
  return removed;

  async function needed(key: string): Promise<boolean> {
    const operation = await store.getOperationRecord(ALL_CLIENTS, idGenOfBlobKey(key));
    // Being written: a generation keeps its file under the operation's own key, then finishes.
    const writing = operation && (operation.state === 'queued' || operation.state === 'running');
    if (operation?.result?.key !== key && !writing) {
      const modified = await blobs.modifiedAt(key);
      return modified !== null && modified > now - UNOWNED_AFTER_MS;
    }
    const callback = await store.getCallback(idGenOfBlobKey(key));
    if (!callback || !FINAL_CALLBACK_STATES.includes(callback.state)) return true;
    return (callback.finished_at ?? now) + retention > now;
  }
}
