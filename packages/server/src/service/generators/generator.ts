import { resolve } from 'node:path';
import { extensionOf, type Family, type MediaType } from 'mediahook/protocol';
import { GenerationError } from './generation-error.ts';

/** One operation as a generator sees it. */
export interface GenerationRequest {
  /** The operation's id; also names the result file. */
  id_gen: string;
  kind: 'image' | 'video';
  /** The callback family; a generator may ignore it (the service checks it carries the kind). */
  family: Family;
  prompt: string;
  /** When a non-empty text, the generation fails with exactly this text (to exercise error callbacks). */
  fail_with?: string | null;
}

/** A finished result file. */
export interface GeneratedMedia {
  /** Absolute path of the file, inside `workDir`. */
  path: string;
  /** Decided by the file's bytes, never by its name. */
  mediaType: MediaType;
  bytes: number;
}

export interface GenerateOptions {
  /** A directory the generator may write into; created when missing. */
  workDir: string;
  /** Aborting kills the work under way; the promise then rejects with code `aborted`. */
  signal?: AbortSignal;
}

/**
 * Makes the result of one operation. A failure is a thrown {@link GenerationError} whose
 * message becomes the error callback's text.
 *
 * @example
 * const media = await generator.generate(
 *   { id_gen: '0190…', kind: 'image', family: 'A', prompt: 'a red fox' },
 *   { workDir: '/var/lib/mediahook/work' },
 * );
 * // { path: '/var/lib/mediahook/work/0190….jpg', mediaType: 'image/jpeg', bytes: 48213 }
 */
export interface Generator {
  generate(request: GenerationRequest, options: GenerateOptions): Promise<GeneratedMedia>;
}

/** The media type a request asks for. */
export function mediaTypeOf(kind: GenerationRequest['kind']): MediaType {
  return kind === 'image' ? 'image/jpeg' : 'video/mp4';
}

/**
 * Where a generator writes the result of a request: `<workDir>/<id_gen>.jpg|.mp4`, absolute. Characters
 * of `id_gen` that could leave the directory or trouble a shell are replaced, since `id_gen`
 * is opaque text to a generator.
 *
 * @example
 * outputPathFor('/tmp/work', { id_gen: '0190-ab', kind: 'video' }); // '/tmp/work/0190-ab.mp4'
 */
export function outputPathFor(workDir: string, request: Pick<GenerationRequest, 'id_gen' | 'kind'>): string {
  const safeName = request.id_gen.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 128) || 'result';
  return resolve(workDir, `${safeName}${extensionOf(mediaTypeOf(request.kind))}`);
}

/**
 * Throws the failure the request asks for, if it asks for one. Generators call it first, so
 * `fail_with` behaves the same whichever generator is configured.
 */
export function failIfRequested(request: GenerationRequest): void {
  if (typeof request.fail_with === 'string' && request.fail_with !== '')
    throw new GenerationError('failed_on_request', request.fail_with);
}

/** Rejects with code `aborted` when the signal is already aborted, before any work starts. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted)
    throw new GenerationError('aborted', 'the generation was aborted', { cause: signal.reason });
}
