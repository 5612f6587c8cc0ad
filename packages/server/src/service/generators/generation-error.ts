/**
 * Stable codes of a failed generation; they never change meaning within a major version.
 *
 * - `failed_on_request`: the operation asked to fail (`fail_with`), nothing was generated;
 * - `generation_failed`: the generator ran and failed (a non-zero exit, a crash);
 * - `generator_unavailable`: the generator could not be started (no such program, no ffmpeg);
 * - `generator_timeout`: the generator ran past its time limit and was killed;
 * - `bad_output`: the generator finished but left no file, an empty one, or one whose bytes
 *   are not the requested media type;
 * - `aborted`: the caller aborted the generation (e.g. at shutdown); it may be tried again.
 */
export type GenerationErrorCode =
  | 'failed_on_request'
  | 'generation_failed'
  | 'generator_unavailable'
  | 'generator_timeout'
  | 'bad_output'
  | 'aborted';

/**
 * A generation failed. The message is written for the client: it becomes the text of the error
 * callback (`message` / `img_message`) as it is, so it names what went wrong without local
 * paths where it can.
 *
 * @example
 * try { await generator.generate(request, { workDir }); }
 * catch (e) { if (e instanceof GenerationError) sendErrorCallback(request.id_gen, e.message); }
 */
export class GenerationError extends Error {
  override readonly name = 'GenerationError';
  readonly code: GenerationErrorCode;

  constructor(code: GenerationErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

export function isGenerationError(value: unknown): value is GenerationError {
  return value instanceof GenerationError;
}
