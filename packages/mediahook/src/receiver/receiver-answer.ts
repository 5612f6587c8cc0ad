/** What a receiver answers and tells: its JSON response and the `onOutcome` report. */
import { emitWarning } from 'node:process';
import type {
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

/** The receiver's JSON answer; a refusal closes the connection. */
export function jsonAnswer(status: 200 | 500, body: unknown, closeConnection = false): ReceiverResponse {
  return {
    status,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
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
  if (!options.onOutcome) return;
  const told = outcome();
  const warn = (error: unknown) =>
    emitWarning(`onOutcome failed: ${error instanceof Error ? error.message : String(error)}`);
  try {
    const result: unknown = options.onOutcome(told);
    if (result instanceof Promise) result.catch(warn);
  } catch (error) {
    warn(error);
  }
}
