/** What a receiver answers and tells: its JSON response, and the `onOutcome` and `onHandlerError` reports. */
import { emitWarning } from 'node:process';
import type {
  ReceivedCallback,
  ReceiverOptions,
  ReceiverOutcome,
  ReceiverRequest,
  ReceiverResponse,
} from './receiver-types.ts';

/** The request headers an outcome carries, for `listen`'s log and inspector. */
const OUTCOME_HEADERS = [
  'content-type',
  'content-length',
  'user-agent',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
] as const;

export function headersOf(request: ReceiverRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of OUTCOME_HEADERS) {
    const value = request.header(name);
    if (value !== undefined) headers[name] = value;
  }
  return headers;
}

/** The receiver's JSON answer; a refusal closes the connection, and a 405 names the one method. */
export function jsonAnswer(
  status: ReceiverResponse['status'],
  body: unknown,
  closeConnection = false,
): ReceiverResponse {
  return {
    status,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      ...(status === 405 ? { allow: 'POST' } : {}),
    },
    body: JSON.stringify(body),
    closeConnection,
  };
}

/**
 * Tells `onOutcome`. An observer that throws (or rejects) only gets a warning: it must not
 * turn an accepted callback into a 500 after its file was stored, nor leave the request hanging.
 * The outcome is built only when there is an observer to tell: without one, its headers and
 * times are work for nothing on every request.
 */
export function report(options: ReceiverOptions, outcome: () => ReceiverOutcome): void {
  const observer = options.onOutcome;
  if (observer) tellSafely('onOutcome', () => observer(outcome()));
}

/**
 * Tells `onHandlerError` that a handler threw; by default one line on stderr naming the
 * callback's id_gen. Like an observer's, its own failure only gets a warning.
 */
export function reportHandlerError(
  options: ReceiverOptions,
  error: unknown,
  callback: ReceivedCallback,
): void {
  const tell = options.onHandlerError ?? printHandlerError;
  tellSafely('onHandlerError', () => tell(error, callback));
}

/** Calls an option's function; its throw or rejection becomes a process warning. */
function tellSafely(name: string, call: () => unknown): void {
  const warn = (error: unknown) =>
    emitWarning(`${name} failed: ${error instanceof Error ? error.message : String(error)}`);
  try {
    const result = call();
    if (result instanceof Promise) result.catch(warn);
  } catch (error) {
    warn(error);
  }
}

function printHandlerError(error: unknown, callback: ReceivedCallback): void {
  const handler = callback.event === 'success' ? 'onSuccess' : 'onError';
  const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  // JSON strings: whatever the sender put in id_gen, or the handler in its message, stays one line.
  console.error(
    `mediahook: ${handler} threw for id_gen ${JSON.stringify(callback.id_gen)} (answered 500 handler_failed): ${JSON.stringify(reason)}`,
  );
}
