/**
 * What a delivery worker sends for an operation: the callback its outcome stands for, and its
 * result file as the sender takes it.
 */
import type { FileSource, OutgoingCallback } from 'mediahook/protocol';
import { callbackStatusOf, type OperationRecord, type OperationResult } from '../store/index.ts';
import type { AllocateBuffer, BlobStore } from './blobs/index.ts';
import type { AttemptResult } from './callback-sender.ts';

/**
 * Results up to this size are read whole and sent from memory: one read, where streaming a
 * small file costs more CPU than the request that carries it. Larger ones are streamed.
 */
const IN_MEMORY_RESULT_BYTES = 1024 * 1024;

/**
 * The callback an operation's outcome stands for.
 *
 * @example
 * await sender.send(operation.webhook_url, outgoingCallbackOf(operation, await resultFileOf(blobs, result)));
 */
export function outgoingCallbackOf(operation: OperationRecord, file: FileSource | null): OutgoingCallback {
  // An outcome handed in carries its own time_gen, sent as it was given.
  const time_gen = operation.time_gen ?? new Date(operation.finished_at ?? Date.now()).toISOString();
  const fields = { family: operation.family, id_gen: operation.id_gen, time_gen };
  if (operation.state === 'succeeded' && operation.result && file !== null) {
    return {
      ...fields,
      event: 'success',
      status: callbackStatusOf(operation, true),
      file,
      mediaType: operation.result.media_type,
    };
  }
  return {
    ...fields,
    event: 'error',
    status: callbackStatusOf(operation, false),
    message: operation.error_message ?? 'the operation failed',
  };
}

/**
 * A result's bytes (up to 1 MiB, in a buffer from `allocate` when read at once), or for a larger
 * one a source that opens it from the blob store each time it is read (twice when signed), or
 * null when it is no longer kept.
 */
async function resultFileOf(
  blobs: BlobStore,
  result: OperationResult,
  allocate?: AllocateBuffer,
): Promise<FileSource | null> {
  if (result.bytes <= IN_MEMORY_RESULT_BYTES) return blobs.read(result.key, result.bytes, allocate);
  const size = await blobs.size(result.key);
  if (size === null) return null;
  return {
    size,
    async open() {
      const opened = await blobs.open(result.key);
      if (!opened) throw new Error('result_missing: the result file is no longer kept');
      return opened.stream;
    },
  };
}

/**
 * {@link resultFileOf}, watched: `unreadable()` is what kept a large result's stream from
 * opening while it was being sent (the blob store failing, not the file missing), or null.
 */
export async function watchedResultOf(
  blobs: BlobStore,
  result: OperationResult,
  allocate?: AllocateBuffer,
): Promise<{ file: FileSource | null; unreadable: () => unknown }> {
  const file = await resultFileOf(blobs, result, allocate);
  let unreadable: unknown = null;
  if (file === null || typeof file !== 'object' || !('open' in file)) return { file, unreadable: () => null };
  return {
    file: {
      size: file.size,
      async open() {
        try {
          return await file.open();
        } catch (error) {
          if (!String(error).includes('result_missing')) unreadable = error;
          throw error;
        }
      },
    },
    unreadable: () => unreadable,
  };
}

/** An attempt that ends before anything is sent: refused for good, or to be tried again. */
export function unsentAttempt(error: string, verdict: 'refused' | 'retry'): AttemptResult {
  return {
    at: new Date().toISOString(),
    duration_ms: 0,
    status_code: null,
    error,
    response_head: null,
    request_headers: null,
    response_headers: null,
    verdict,
    retry_after_ms: null,
  };
}
