/**
 * Outcomes made outside mediahook, handed in for delivery (`POST /v1/callbacks`): checked,
 * the file streamed to the blob store, and recorded as a finished operation of kind
 * `external` whose callback is then delivered like any other.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { DEFAULT_LIMITS, FAMILIES, type Family, parseTimeGen, ProtocolError } from 'mediahook/protocol';
import { BLOB_ID, type BlobBytes, type BlobStore } from '../../delivery/index.ts';
import {
  type ClientScope,
  DEFAULT_CLIENT,
  type OperationRecord,
  type OperationResource,
  type SubmittedOperation,
} from '../../store/index.ts';
import { webhookUrlProblem } from '../request-validation.ts';
import { takeFileIn, type TakenFile } from './file-intake.ts';
import { SubmissionError } from './submission-error.ts';

/** A finished outcome to deliver: the parts of `POST /v1/callbacks`. */
export interface CallbackInput {
  webhook_url: string;
  /** `A` or `B`. */
  family: string;
  /** Sent as the callback's `status`; `success` or `error` when absent. */
  status?: string | undefined;
  /** The operation's id: 1 to 128 of `A-Z a-z 0-9 _ -`, starting with a letter or digit. */
  id_gen: string;
  /** Sent as it is; the time of hand-in when absent. RFC 3339 or Unix seconds/milliseconds. */
  time_gen?: string | undefined;
  /** The result file (JPEG, or MP4 in family A): a path, or its bytes as they come. */
  result?: string | BlobBytes | undefined;
  /** The error text, for a failed operation. */
  message?: string | undefined;
}

/** What the store needs to record hand-ins. */
interface SubmissionStore {
  getOperationRecord(scope: ClientScope, idGen: string): Promise<OperationRecord | undefined>;
  getOperation(scope: ClientScope, idGen: string): Promise<OperationResource | undefined>;
  submitOperation(operation: SubmittedOperation): Promise<void>;
}

export interface SubmitOptions {
  /** Largest result file, in bytes (1 GiB). */
  maxFileBytes?: number | undefined;
  /**
   * The client handing it in (`default`): its secret signs the callback, and an `id_gen` of
   * another client's is a `conflict` that shows nothing of it.
   */
  client?: string | undefined;
}

/** `created`: a new operation (HTTP 202); else the same hand-in again (HTTP 200). */
export interface SubmitResult {
  created: boolean;
  operation: OperationResource;
}

/**
 * Hands a finished outcome in for delivery. Handing the same `id_gen` in again with the same
 * parts (an absent part staying absent) and the same file bytes answers the existing
 * operation; with anything different it is a `conflict`. Bad input throws a `SubmissionError`
 * (`invalid`, `conflict`) or the protocol's `ProtocolError` (`media_mismatch`, `file_too_large`).
 * Repeats are looked for among the client's own operations only: another client's `id_gen`
 * is a `conflict` that says nothing more.
 *
 * @example
 * const { operation } = await submitCallback(store, service.blobs, {
 *   webhook_url: 'https://client.example/hook', family: 'A', id_gen: 'job-1842',
 *   result: '/renders/job-1842.jpg',
 * });
 */
export async function submitCallback(
  store: SubmissionStore,
  blobs: BlobStore,
  input: CallbackInput,
  options: SubmitOptions = {},
): Promise<SubmitResult> {
  const fields = checkFields(input);
  const client = options.client ?? DEFAULT_CLIENT;
  const existing = await store.getOperationRecord(client, fields.id_gen);
  let file: TakenFile | null = null;
  if (input.result !== undefined) {
    const bytes = typeof input.result === 'string' ? createReadStream(input.result) : input.result;
    file = await takeFileIn(bytes, {
      idGen: fields.id_gen,
      family: fields.family,
      maxBytes: options.maxFileBytes ?? DEFAULT_LIMITS.fileBytes,
      // A repeat is only compared: its bytes are hashed, not kept.
      blobs: existing ? null : blobs,
    });
  }
  const fingerprint = fingerprintOf(fields, file);
  if (existing) return sameAgain(store, client, existing, fingerprint);
  const finishedAt = fields.time_gen === null ? Date.now() : parseTimeGen(fields.time_gen)!.getTime();
  try {
    await store.submitOperation({
      id_gen: fields.id_gen,
      client,
      family: fields.family,
      webhook_url: fields.webhook_url,
      status_text: fields.status,
      time_gen: fields.time_gen,
      finished_at: finishedAt,
      submission_sha256: fingerprint,
      outcome:
        file === null
          ? { state: 'failed', message: input.message! }
          : { state: 'succeeded', result: { key: file.key!, media_type: file.mediaType, bytes: file.bytes } },
    });
  } catch (error) {
    if (file?.key) await blobs.remove(file.key);
    // Handed in twice at once: the other one was recorded first (or it is another client's).
    const now =
      (error as { code?: string }).code === 'conflict' &&
      (await store.getOperationRecord(client, fields.id_gen));
    if (now) return sameAgain(store, client, now, fingerprint);
    throw error;
  }
  return { created: true, operation: (await store.getOperation(client, fields.id_gen))! };
}

interface CheckedFields {
  webhook_url: string;
  family: Family;
  status: string | null;
  id_gen: string;
  time_gen: string | null;
  message: string | null;
}

function checkFields(input: CallbackInput): CheckedFields {
  for (const name of ['webhook_url', 'family', 'id_gen'] as const) {
    if (typeof input[name] !== 'string')
      throw new ProtocolError('missing_part', `the ${name} part is missing`);
  }
  if ((input.result === undefined) === (input.message === undefined)) {
    throw input.result === undefined
      ? new ProtocolError('missing_part', 'either a result file or a message is required')
      : new ProtocolError('unexpected_part', 'a result file and a message cannot both be given');
  }
  for (const name of ['webhook_url', 'status', 'time_gen', 'message'] as const) {
    const text = input[name];
    if (text === undefined) continue;
    if (Buffer.byteLength(text) > DEFAULT_LIMITS.textBytes) {
      throw new ProtocolError('text_too_large', `the ${name} part is over ${DEFAULT_LIMITS.textBytes} bytes`);
    }
    // The store cannot hold U+0000 (PostgreSQL text), and a callback's text should not carry it.
    if (text.includes('\u0000')) throw new SubmissionError('invalid', `the ${name} part contains U+0000`);
  }
  const problem = webhookUrlProblem(input.webhook_url);
  if (problem) throw new SubmissionError('invalid', `webhook_url ${problem}`);
  if (!FAMILIES.includes(input.family as Family)) {
    throw new SubmissionError('invalid', `family must be one of ${FAMILIES.join(', ')}`);
  }
  if (!BLOB_ID.test(input.id_gen)) {
    throw new SubmissionError(
      'invalid',
      'id_gen must be 1 to 128 of A-Z a-z 0-9 _ -, starting with a letter or digit',
    );
  }
  if (input.time_gen !== undefined && parseTimeGen(input.time_gen) === null) {
    throw new SubmissionError('invalid', 'time_gen must be an RFC 3339 time or Unix seconds or milliseconds');
  }
  if (input.message === '') throw new SubmissionError('invalid', 'message must not be empty');
  return {
    webhook_url: input.webhook_url,
    family: input.family as Family,
    status: input.status ?? null,
    id_gen: input.id_gen,
    time_gen: input.time_gen ?? null,
    message: input.message ?? null,
  };
}

/** One hash of every part as handed in: what a repeat must match exactly. */
function fingerprintOf(fields: CheckedFields, file: TakenFile | null): string {
  const { webhook_url, family, status, time_gen, message } = fields;
  const parts = [webhook_url, family, status, time_gen, message, file && [file.mediaType, file.sha256]];
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

async function sameAgain(
  store: SubmissionStore,
  client: string,
  existing: OperationRecord,
  fingerprint: string,
): Promise<SubmitResult> {
  if (existing.submission_sha256 !== fingerprint) {
    throw new SubmissionError(
      'conflict',
      `operation ${existing.id_gen} was handed in before with other content`,
    );
  }
  return { created: false, operation: (await store.getOperation(client, existing.id_gen))! };
}
