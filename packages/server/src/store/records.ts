/**
 * From table rows to what the store hands out: records (times in milliseconds) and the
 * operation resource of `GET /v1/operations/{id_gen}` (see the API section of docs/service.md;
 * times as RFC 3339 UTC text with milliseconds).
 */
import type { Selectable } from 'kysely';
import type { AttemptsTable, CallbacksTable, EndpointsTable, OperationsTable } from './schema.ts';
import type {
  AttemptRecord,
  CallbackRecord,
  EndpointRecord,
  OperationRecord,
  OperationResource,
} from './store.ts';

export type OperationRow = Selectable<OperationsTable>;
export type CallbackRow = Selectable<CallbacksTable>;
export type AttemptRow = Selectable<AttemptsTable>;
/** What the operation resource shows of an attempt. */
export type ResourceAttemptRow = Pick<
  AttemptRow,
  'at' | 'duration_ms' | 'status_code' | 'error' | 'response_head' | 'request_headers' | 'response_headers'
>;

/** The most response text kept per attempt: enough to see an error body, not to store a page. */
export const RESPONSE_HEAD_CHARS = 1024;

/** The most header text kept per attempt and direction: every header a sender or receiver sends normally. */
export const HEADERS_CHARS = 4096;

/** Headers kept as JSON text, back as an object; null when none were kept. */
function headersOf(text: string | null): Record<string, string> | null {
  return text === null ? null : (JSON.parse(text) as Record<string, string>);
}

/**
 * Milliseconds as RFC 3339 UTC text with milliseconds, the service's one time format.
 *
 * @example
 * isoTime(0); // '1970-01-01T00:00:00.000Z'
 */
export function isoTime(ms: number): string {
  return new Date(Number(ms)).toISOString();
}

function isoTimeOrNull(ms: number | null): string | null {
  return ms === null ? null : isoTime(ms);
}

// PostgreSQL hands `bigint` back as text unless told otherwise; the pool is told, and this
// keeps a record right even for a connection that was not.
function num(value: number): number;
function num(value: number | null): number | null;
function num(value: number | null): number | null {
  return value === null ? null : Number(value);
}

export function toOperationRecord(row: OperationRow): OperationRecord {
  return {
    id_gen: row.id_gen,
    client: row.client,
    kind: row.kind,
    family: row.family,
    state: row.state,
    webhook_url: row.webhook_url,
    endpoint_key: row.endpoint_key,
    prompt: row.prompt,
    fail_with: row.fail_with,
    status_text: row.status_text,
    created_at: num(row.created_at),
    started_at: num(row.started_at),
    finished_at: num(row.finished_at),
    result:
      row.result_key === null || row.result_media_type === null
        ? null
        : { key: row.result_key, media_type: row.result_media_type, bytes: num(row.result_bytes ?? 0) },
    error_message: row.error_message,
    lease_owner: row.lease_owner,
    lease_expires_at: num(row.lease_expires_at),
    runs: num(row.runs),
    time_gen: row.time_gen,
    submission_sha256: row.submission_sha256,
  };
}

export function toCallbackRecord(row: CallbackRow): CallbackRecord {
  return {
    id_gen: row.id_gen,
    state: row.state,
    next_attempt_at: num(row.next_attempt_at),
    attempt_count: num(row.attempt_count),
    round: num(row.round),
    round_attempt_count: num(row.round_attempt_count),
    lease_owner: row.lease_owner,
    lease_expires_at: num(row.lease_expires_at),
    endpoint_key: row.endpoint_key,
    created_at: num(row.created_at),
    finished_at: num(row.finished_at),
    last_error: row.last_error,
  };
}

export function toAttemptRecord(row: AttemptRow): AttemptRecord {
  return {
    id_gen: row.id_gen,
    seq: num(row.seq),
    round: num(row.round),
    at: num(row.at),
    duration_ms: num(row.duration_ms),
    status_code: num(row.status_code),
    error: row.error,
    response_head: row.response_head,
    worker_id: row.worker_id,
    endpoint_key: row.endpoint_key,
    request_headers: headersOf(row.request_headers),
    response_headers: headersOf(row.response_headers),
  };
}

export function toEndpointRecord(row: Selectable<EndpointsTable>): EndpointRecord {
  return {
    key: row.key,
    circuit_state: row.circuit_state,
    consecutive_failures: num(row.consecutive_failures),
    open_until: num(row.open_until),
    updated_at: num(row.updated_at),
  };
}

/**
 * The `status` part an operation's callback carries: its override, else `success` or `error`
 * by the outcome.
 */
export function callbackStatusOf(operation: Pick<OperationRow, 'status_text'>, success: boolean): string {
  return operation.status_text ?? (success ? 'success' : 'error');
}

/**
 * The resource of one operation. Before the operation finishes there is no outbox row yet; the
 * callback then shows as `pending` with no due time and no attempts, so the shape never varies.
 * `next_attempt_at` is shown only while an attempt is scheduled (`pending`, `retrying`).
 */
export function toOperationResource(
  op: OperationRow,
  callback: Pick<CallbackRow, 'state' | 'next_attempt_at'> | undefined,
  attempts: readonly ResourceAttemptRow[],
): OperationResource {
  return {
    id_gen: op.id_gen,
    client: op.client,
    kind: op.submission_sha256 === null ? op.kind : 'external',
    family: op.family,
    state: op.state,
    webhook_url: op.webhook_url,
    created_at: isoTime(op.created_at),
    finished_at: isoTimeOrNull(op.finished_at),
    error_message: op.state === 'failed' ? op.error_message : null,
    callback: {
      state: callback?.state ?? 'pending',
      status:
        op.state === 'succeeded' || op.state === 'failed'
          ? callbackStatusOf(op, op.state === 'succeeded')
          : null,
      next_attempt_at:
        callback?.state === 'pending' || callback?.state === 'retrying'
          ? isoTimeOrNull(num(callback.next_attempt_at))
          : null,
      attempts: attempts.map((a) => ({
        at: isoTime(a.at),
        duration_ms: num(a.duration_ms),
        status_code: num(a.status_code),
        error: a.error,
        response_head: a.response_head,
        request_headers: headersOf(a.request_headers),
        response_headers: headersOf(a.response_headers),
      })),
    },
  };
}
