import type { Receipt } from '../receiver/index.ts';
import type { ForwardRecord, ListenOutcome } from './keeping-receiver.ts';

/** One line of `mediahook listen --json`; field names are fixed (docs/cli.md, listen). */
type ListenRecord =
  | {
      event: 'success';
      family: string;
      status: string;
      id_gen: string;
      time_gen: string;
      duplicate: boolean;
      file: { path: string | null; mediaType: string; bytes: number; sha256: string | null };
    }
  | {
      event: 'error';
      family: string;
      status: string;
      id_gen: string;
      time_gen: string;
      duplicate: boolean;
      message: string;
    }
  | { event: 'rejected'; code: string; message: string };

/** A record, with the app's answer when the callback was forwarded (`listen --forward-to`). */
type RecordWithForward = ListenRecord & { forward?: ForwardRecord };

/** The NDJSON record of one request's outcome; `forward` is there when it was forwarded. */
export function listenRecordOf(outcome: ListenOutcome): RecordWithForward {
  const record = receivedRecordOf(outcome);
  return outcome.forward ? { ...record, forward: outcome.forward } : record;
}

function receivedRecordOf(outcome: ListenOutcome): ListenRecord {
  const callback = outcome.callback;
  if (outcome.verdict === 'rejected' || callback === null) {
    return {
      event: 'rejected',
      code: outcome.error?.code ?? 'internal_error',
      message: outcome.error?.message ?? '',
    };
  }
  // A duplicate is told as what the receiver has: the callback it accepted first.
  if (outcome.verdict === 'duplicate' && outcome.receipt) return duplicateRecordOf(outcome.receipt);
  const common = {
    family: callback.family,
    status: callback.status,
    id_gen: callback.id_gen,
    time_gen: callback.time_gen,
    duplicate: outcome.verdict === 'duplicate',
  };
  if (callback.event === 'error') return { event: 'error', ...common, message: callback.message };
  const { path, mediaType, bytes, sha256 } = callback.file;
  return { event: 'success', ...common, file: { path, mediaType, bytes, sha256 } };
}

function duplicateRecordOf(receipt: Receipt): ListenRecord {
  const common = {
    family: receipt.family,
    status: receipt.status,
    id_gen: receipt.id_gen,
    time_gen: receipt.time_gen,
    duplicate: true,
  };
  if (receipt.event === 'error') return { event: 'error', ...common, message: receipt.message ?? '' };
  const file = {
    path: receipt.file_path,
    mediaType: receipt.media_type ?? '',
    bytes: receipt.bytes ?? 0,
    sha256: receipt.sha256,
  };
  return { event: 'success', ...common, file };
}

/** A readable line for a terminal. */
export function listenLineOf(outcome: ListenOutcome): string {
  const record = receivedRecordOf(outcome);
  const time = outcome.receivedAt.slice(11, 23);
  const ms = `${Math.round(outcome.durationMs)} ms`;
  if (record.event === 'rejected') return `${time}  rejected   ${record.code}: ${record.message}  (${ms})`;
  const verdict = record.duplicate ? 'duplicate' : 'accepted ';
  const head = `${time}  ${verdict}  ${record.family} ${record.event.padEnd(7)} id_gen=${record.id_gen} status=${record.status}`;
  const line =
    record.event === 'error'
      ? `${head}  message=${JSON.stringify(record.message)}  (${ms})`
      : `${head}  ${record.file.mediaType} ${record.file.bytes} B → ${record.file.path ?? '(not stored)'}  (${ms})`;
  return outcome.forward ? `${line}  ${forwardLineOf(outcome.forward)}` : line;
}

/** The app's answer, after the line: `→ app 200 (12 ms)`. */
function forwardLineOf(forward: ForwardRecord): string {
  const answer = forward.status === null ? (forward.code ?? 'no answer') : String(forward.status);
  return `→ app ${answer} (${forward.ms} ms)`;
}
