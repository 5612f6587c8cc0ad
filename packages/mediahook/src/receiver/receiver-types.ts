import type { ErrorCallback, ReceivedFile, FileSink, SuccessCallback } from '../protocol/index.ts';
import type { Receipt } from './receipt-store.ts';
import type { ErrorBody } from './receiver-error.ts';

/** A request as an adapter hands it over: a header lookup and the body, live or already read. */
export interface ReceiverRequest {
  /** A request header by lower-case name. */
  header(name: string): string | undefined;
  body: AsyncIterable<Uint8Array> | Uint8Array | null;
  /** Set by an adapter that could not get the body: the answer is the 500 for this error. */
  failure?: unknown;
  /** Aborted when the sender is gone: a copy waiting for another process's claim stops waiting. */
  signal?: AbortSignal;
}

/** The answer an adapter sends. */
export interface ReceiverResponse {
  status: 200 | 500;
  headers: Record<string, string>;
  body: string;
  /** True when the body may not have been read to its end: the connection should be closed. */
  closeConnection: boolean;
}

/** The result file as a handler sees it: where it was stored, or the user's own sink. */
export interface StoredFile extends ReceivedFile<FileSink> {
  /** Absolute path of the stored file; null when a custom sink took the bytes. */
  path: string | null;
}

export interface ReceivedSuccess extends Omit<SuccessCallback<FileSink>, 'file'> {
  file: StoredFile;
}

export type ReceivedCallback = ReceivedSuccess | ErrorCallback;

/** What became of one request, for logs, `listen --json` and the inspector. */
export interface ReceiverOutcome {
  verdict: 'accepted' | 'duplicate' | 'rejected';
  /**
   * What this request carried, as far as it was read. A duplicate's bytes were validated and
   * dropped: its `file.path` is null, and `receipt` says what was stored the first time.
   */
  callback: ReceivedCallback | null;
  /** For a duplicate, the receipt of the callback accepted first; else null. */
  receipt: Receipt | null;
  error: ErrorBody['error'] | null;
  receivedAt: string;
  durationMs: number;
  /** The request headers that matter to someone debugging a callback. */
  headers: Record<string, string>;
}
