import type { Receipt, ReceiverOutcome } from '../receiver/index.ts';

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

/** The NDJSON record of one request's outcome. */
export function listenRecordOf(outcome: ReceiverOutcome): ListenRecord {
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
export function listenLineOf(outcome: ReceiverOutcome): string {
  const record = listenRecordOf(outcome);
  const time = outcome.receivedAt.slice(11, 23);
  const ms = `${Math.round(outcome.durationMs)} ms`;
  if (record.event === 'rejected') return `${time}  rejected   ${record.code}: ${record.message}  (${ms})`;
  const verdict = record.duplicate ? 'duplicate' : 'accepted ';
  const head = `${time}  ${verdict}  ${record.family} ${record.event.padEnd(7)} id_gen=${record.id_gen} status=${record.status}`;
  if (record.event === 'error') return `${head}  message=${JSON.stringify(record.message)}  (${ms})`;
  return `${head}  ${record.file.mediaType} ${record.file.bytes} B → ${record.file.path ?? '(not stored)'}  (${ms})`;
}
