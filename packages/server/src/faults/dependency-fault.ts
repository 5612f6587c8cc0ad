/**
 * The line between a failure and a fault. A failure is a verdict about the input (the generator
 * refused it, the request is bad) and is final. A fault is the service's own dependency being
 * unavailable for now (the database, the blob store, the disk, a program that cannot start):
 * the work waits and is tried again, and a request that needs it is answered 503.
 */
import { type FaultInput, isStoreError } from '../store/index.ts';

/** Error codes of Node and libuv that say a connection, a disk or a program is not there now. */
const FAULT_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ENOSPC',
  'EDQUOT',
  'EIO',
  'EROFS',
  'EMFILE',
  'ENFILE',
  'EACCES',
  'EPERM',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** PostgreSQL SQLSTATE classes of a server that is gone or out of resources. */
const POSTGRES_FAULT_STATE = /^(08|53|57P0[1-3]|58)/;

/** What node-postgres throws, with no code, when a connection ends or cannot be made. */
const POSTGRES_CLIENT_FAULT =
  /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Client was closed)/;

/** SQLite result codes of a database that is busy, full or cannot be read or written. */
const SQLITE_FAULT = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|READONLY|PROTOCOL|NOMEM)/;

/** Names the AWS SDK gives an object store's passing trouble. */
const S3_FAULT_NAMES = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeTooSkewed',
  'SlowDown',
  'ServiceUnavailable',
  'InternalError',
  'CredentialsProviderError',
]);

interface ErrorFields {
  code?: unknown;
  name?: unknown;
  message?: unknown;
  cause?: unknown;
  errors?: unknown;
  $fault?: unknown;
  $metadata?: { httpStatusCode?: unknown };
}

/**
 * Whether `error` (or an error it wraps: `cause`, an AggregateError's `errors`) is a fault of a
 * dependency rather than a verdict or a bug.
 *
 * @example
 * catch (error) { if (isDependencyFault(error)) retryLater(); else fail(error); }
 */
export function isDependencyFault(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false;
  const e = error as ErrorFields;
  if (isStoreError(error)) return error.code === 'unavailable';
  if (typeof e.code === 'string') {
    if (FAULT_ERRNO.has(e.code) || SQLITE_FAULT.test(e.code)) return true;
    if (e.code.length === 5 && POSTGRES_FAULT_STATE.test(e.code)) return true;
  }
  if (typeof e.message === 'string' && POSTGRES_CLIENT_FAULT.test(e.message)) return true;
  if (typeof e.name === 'string' && S3_FAULT_NAMES.has(e.name)) return true;
  const status = e.$metadata?.httpStatusCode;
  if (e.$fault === 'server' || (typeof status === 'number' && status >= 500)) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isDependencyFault(inner, depth + 1))) return true;
  return isDependencyFault(e.cause, depth + 1);
}

/** The first pause after a fault, and the longest. */
const FIRST_RETRY_MS = 1_000;
const LONGEST_RETRY_MS = 60_000;

/** How long a fault may last before the work it holds up fails (24 h). */
export const DEFAULT_FAULT_RETRY_FOR_MS = 24 * 3_600_000;

/**
 * The next step of a fault that began at `since` (now when this is the first): tried again
 * after a pause that doubles from 1 s to 1 min (the time since the fault began, which grows that
 * way), or null once the fault has lasted `retryForMs` and the work should fail.
 *
 * @example
 * const next = nextFaultTry(record.fault?.since ?? null, Date.now(), DEFAULT_FAULT_RETRY_FOR_MS, 'the blob store is unavailable');
 */
export function nextFaultTry(
  since: number | null,
  now: number,
  retryForMs: number,
  message: string,
): FaultInput | null {
  const began = since ?? now;
  const lasted = now - began;
  if (lasted >= retryForMs) return null;
  const pause = Math.min(LONGEST_RETRY_MS, Math.max(FIRST_RETRY_MS, lasted));
  return { message, since: began, next_try_at: now + pause };
}

/** The error text of work that failed because a fault lasted too long. */
export function unavailableFailure(fault: string): string {
  return `the service was unavailable: ${fault}`;
}
