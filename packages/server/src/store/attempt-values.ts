/**
 * Recording an attempt, as bound values: what moves the callback on and what the attempt's row
 * holds, and the conditional UPDATE that moves it, shared by both databases' statements.
 */
import { HEADERS_CHARS, RESPONSE_HEAD_CHARS } from './records.ts';
import type { CallbackState, StoreDb } from './schema.ts';
import type { AttemptInput, NextCallbackState } from './store.ts';
import { StoreError } from './store-error.ts';

function checkNext(next: NextCallbackState): void {
  switch (next?.state) {
    case 'delivered':
    case 'gone':
    case 'dead':
      return;
    case 'retrying':
      if (Number.isFinite(next.next_attempt_at)) return;
      throw new StoreError('invalid_argument', 'retrying needs a next_attempt_at');
    default:
      throw new StoreError('invalid_argument', 'next state is delivered, gone, dead or retrying');
  }
}

/**
 * Text as both databases can keep it: a receiver's answer is arbitrary bytes, and PostgreSQL's
 * `text` refuses U+0000 (failing the statement, so the attempt could never be recorded), so each
 * NUL becomes U+FFFD, on SQLite too.
 */
function storable(text: string): string;
function storable(text: string | null): string | null;
function storable(text: string | null): string | null {
  return text === null ? null : text.replaceAll('\u0000', '\uFFFD');
}

/**
 * Headers as the JSON text kept, each name and value storable, the ones after `HEADERS_CHARS`
 * of them left out (a receiver's answer may carry any number), so the text is always whole JSON.
 */
function headersText(headers: Readonly<Record<string, string>> | null | undefined): string | null {
  if (headers === null || headers === undefined) return null;
  const kept: Record<string, string> = {};
  let size = 2;
  for (const [name, value] of Object.entries(headers)) {
    const entry = JSON.stringify({ [storable(name)]: storable(String(value)) }).length - 1;
    if (size + entry > HEADERS_CHARS) break;
    kept[storable(name)] = storable(String(value));
    size += entry;
  }
  return JSON.stringify(kept);
}

function errorOf(attempt: AttemptInput): string | null {
  if (attempt.error !== null && attempt.error !== undefined) return storable(attempt.error);
  const code = attempt.status_code;
  return code !== null && (code < 200 || code > 299) ? `HTTP ${code}` : null;
}

/** What recording an attempt binds: the callback's next state and the attempt's row. */
export function recordValues(
  idGen: string,
  workerId: string,
  attempt: AttemptInput,
  next: NextCallbackState,
  now: number,
) {
  checkNext(next);
  const final = next.state !== 'retrying';
  return {
    state: next.state,
    nextAttemptAt: next.state === 'retrying' ? next.next_attempt_at : null,
    scheduleStep: next.state === 'retrying' && next.advances_schedule === false ? 0 : 1,
    finishedAt: final ? now : null,
    lastError: errorOf(attempt),
    idGen,
    workerId,
    at: attempt.at,
    durationMs: Math.max(0, Math.round(attempt.duration_ms)),
    statusCode: attempt.status_code,
    error: storable(attempt.error ?? null),
    responseHead: storable(attempt.response_head?.slice(0, RESPONSE_HEAD_CHARS) ?? null),
    requestHeaders: headersText(attempt.request_headers),
    responseHeaders: headersText(attempt.response_headers),
  };
}

export type RecordValues = ReturnType<typeof recordValues>;

/** Of those, what moving the callback on binds. */
export function moveOnValues({
  state,
  nextAttemptAt,
  scheduleStep,
  finishedAt,
  lastError,
  idGen,
  workerId,
}: RecordValues) {
  return { state, nextAttemptAt, scheduleStep, finishedAt, lastError, idGen, workerId };
}

/** The callback moved on by one attempt, provided `v.workerId` still holds its lease. */
export function moveOnQuery(db: StoreDb, v: ReturnType<typeof moveOnValues>) {
  return db
    .updateTable('callbacks')
    .set((eb) => ({
      state: v.state as CallbackState,
      next_attempt_at: v.nextAttemptAt,
      attempt_count: eb('attempt_count', '+', 1),
      round_attempt_count: eb('round_attempt_count', '+', v.scheduleStep),
      lease_owner: null,
      lease_expires_at: null,
      finished_at: v.finishedAt,
      last_error: v.lastError,
    }))
    .where('id_gen', '=', v.idGen)
    .where('state', '=', 'delivering')
    .where('lease_owner', '=', v.workerId)
    .returningAll();
}
