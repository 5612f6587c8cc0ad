import type {
  ErrorCallback,
  Family,
  FileSink,
  FileSinkFactory,
  Limits,
  ReceivedFile,
  SuccessCallback,
} from '../protocol/index.ts';
import type { Receipt, ReceiptStore } from './receipt-store.ts';
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
  /** The request method, when the adapter knows it: any but `POST` is answered 405. */
  method?: string | undefined;
}

/** The answer an adapter sends. */
export interface ReceiverResponse {
  status: 200 | 405 | 500;
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

export interface ReceiverOptions {
  /** Directory for result files (and, by default, receipts in its `.mediahook` folder). Default `./callbacks`. */
  out?: string | undefined;
  /** Take the file bytes yourself instead of storing them in `out`. */
  sink?: FileSinkFactory | undefined;
  /**
   * `whsec_…` secret(s): when set, every callback must carry a valid signature. A malformed
   * secret makes `createReceiver` throw a TypeError.
   */
  secret?: string | readonly string[] | undefined;
  /** Signature timestamp tolerance in seconds (300). */
  toleranceSeconds?: number | undefined;
  limits?: Partial<Limits> | undefined;
  /**
   * Largest whole request body (`body_too_large`). By default the file limit plus 1 MiB, and a
   * `Content-Length` over it is answered `file_too_large`, as the file must be what is over.
   */
  maxBodyBytes?: number | undefined;
  /** Accept only this family. */
  family?: Family | undefined;
  /** Idempotency records; default a `DirectoryReceiptStore` in `<out>/.mediahook`. */
  store?: ReceiptStore | undefined;
  /** Life of an unrenewed claim (ms, 30 s): a dead process's claim on a callback is taken over after it. */
  claimTtlMs?: number | undefined;
  /** How long a copy waits for another process handling the same callback (ms, 30 s): then `in_progress`. */
  claimWaitMs?: number | undefined;
  /**
   * Origins whose browser pages may post callbacks (`https://app.example`). A sender never sends
   * `Origin`, and a browser always does on a cross-origin POST: any other request carrying one is
   * refused `cross_origin_request`, and nothing is stored. Default none.
   */
  allowedOrigins?: readonly string[] | undefined;
  /**
   * Mode of the result files (and temporary files) it creates: 0o600 by default, the owner
   * alone; widen it (0o640) for another process that reads them. Set past the umask.
   */
  fileMode?: number | undefined;
  /** Mode of the directories it creates, `out` included: 0o700 by default; 0o750 with 0o640. */
  dirMode?: number | undefined;
  /** Called once per new success callback; throw to answer 500 (the callback may come again). */
  onSuccess?: ((callback: ReceivedSuccess) => unknown) | undefined;
  /** Called once per new error callback; throw to answer 500. */
  onError?: ((callback: ErrorCallback) => unknown) | undefined;
  /**
   * Told when `onSuccess` or `onError` throws (or rejects), besides the 500 `handler_failed`
   * the sender gets. By default one line on stderr naming the callback's `id_gen`.
   */
  onHandlerError?: ((error: unknown, callback: ReceivedCallback) => void) | undefined;
  /** Told of every request's outcome, including duplicates and rejections. */
  onOutcome?: ((outcome: ReceiverOutcome) => void) | undefined;
}
