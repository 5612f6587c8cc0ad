/**
 * The receive suite's checks: a fast wrong server counts for nothing, so every run is checked
 * against what the server answered, stored and left behind, and fails the suite otherwise.
 */
import type { LoadResult, UploadResult } from './receive-load.ts';
import type { ServerKind } from './receive-kinds.ts';
import type { ServerCounts } from './receive-servers.ts';

/** The JPEG callbacks' file, and the loader's connections (each may be cut off once at the end). */
export const JPEG_BYTES = 64 * 1024;
export const CONNECTIONS = 16;

/** A fast wrong server counts for nothing: every run is checked against what the server stored. */
export function checkJpegRun(kind: ServerKind, load: LoadResult, got: ServerCounts): void {
  const problems: string[] = [];
  if (load.ok === 0) problems.push('no request succeeded');
  if (load.non2xx > 0) problems.push(`${load.non2xx} answers were not 200`);
  if (load.errors > 0 || load.timeouts > 0) problems.push(`${load.errors} errors, ${load.timeouts} timeouts`);
  // When the duration is over, up to one request per connection is cut off mid-way.
  if (got.ok < load.ok || got.ok > load.ok + CONNECTIONS) {
    problems.push(`the server answered ${got.ok} × 200, the loader counted ${load.ok}`);
  }
  if (kind === 'raw-http') {
    if (got.receivedBytes !== got.ok * load.bodyBytes) problems.push('raw-http: body bytes do not add up');
  } else {
    // A request whose answer was cut off may still have been stored.
    if (got.stored < got.ok || got.stored > got.ok + CONNECTIONS) {
      problems.push(`${got.stored} files stored for ${got.ok} answers`);
    }
    if (got.files !== got.stored) problems.push(`${got.files} files on disk, ${got.stored} stored`);
    // raw-sink stores the whole body, not the file in it.
    const fileBytes = kind === 'raw-sink' ? load.bodyBytes : JPEG_BYTES;
    if (got.fileBytes !== got.files * fileBytes) problems.push('stored files have the wrong size');
    if (got.partial > 0) problems.push(`${got.partial} temporary files left behind`);
  }
  if (problems.length > 0) throw new Error(`receive, ${kind}, JPEG: ${problems.join('; ')}`);
}

export function checkUpload(kind: ServerKind, fileBytes: number, up: UploadResult, got: ServerCounts): void {
  const problems: string[] = [];
  if (up.status !== 200) problems.push(`answered ${up.status}: ${up.answer.slice(0, 200)}`);
  if (kind === 'raw-http' && got.receivedBytes !== up.bytes) problems.push('body bytes do not add up');
  if (kind === 'ours' || kind === 'busboy' || kind === 'busboy-fs' || kind === 'raw-sink') {
    // raw-sink stores the whole body, not the file in it.
    const bytes = kind === 'raw-sink' ? up.bytes : fileBytes;
    if (got.stored !== 1 || got.files !== 1 || got.fileBytes !== bytes || got.storedBytes !== bytes) {
      problems.push(`stored ${got.files} file(s) of ${got.fileBytes} bytes, expected 1 of ${bytes}`);
    }
    if (got.partial > 0) problems.push('a temporary file was left behind');
  }
  if (problems.length > 0) throw new Error(`receive, ${kind}, upload: ${problems.join('; ')}`);
}
