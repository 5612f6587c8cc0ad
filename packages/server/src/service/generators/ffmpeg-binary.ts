import { GenerationError } from './generation-error.ts';
import { lastLines, type ProcessInput, runProcess } from './process-runner.ts';

/** The environment variable that names an ffmpeg binary explicitly; it wins over everything else. */
export const FFMPEG_PATH_ENV = 'MEDIAHOOK_FFMPEG_PATH';

/** The ffmpeg binary in use and where it was found. */
interface FfmpegBinary {
  path: string;
  source: 'env' | 'path' | 'installer';
}

const PROBE_TIMEOUT_MS = 10_000;

/**
 * Finds a working ffmpeg, in this order: the path in `MEDIAHOOK_FFMPEG_PATH` (when set, it must
 * work: a wrong setting is an error, not a silent fallback); `ffmpeg` from `PATH`; the binary
 * shipped in `@ffmpeg-installer/ffmpeg`. A candidate works when `<it> -version` exits 0.
 * Uncached: see {@link ffmpegBinary}.
 *
 * @example
 * const { path, source } = await findFfmpegBinary(); // { path: 'ffmpeg', source: 'path' }
 */
export async function findFfmpegBinary(env: NodeJS.ProcessEnv = process.env): Promise<FfmpegBinary> {
  const explicit = env[FFMPEG_PATH_ENV];
  if (explicit) {
    if (await runsVersion(explicit, env)) return { path: explicit, source: 'env' };
    throw new GenerationError(
      'generator_unavailable',
      `ffmpeg is not available: ${FFMPEG_PATH_ENV}=${explicit} does not run`,
    );
  }
  if (await runsVersion('ffmpeg', env)) return { path: 'ffmpeg', source: 'path' };
  let installed: string | undefined;
  try {
    // Imported lazily: the package throws at import time on a platform it has no binary for.
    installed = (await import('@ffmpeg-installer/ffmpeg')).default.path;
  } catch {
    installed = undefined;
  }
  if (installed !== undefined && (await runsVersion(installed, env)))
    return { path: installed, source: 'installer' };
  throw new GenerationError(
    'generator_unavailable',
    'ffmpeg is not available: not on PATH and no working binary in @ffmpeg-installer/ffmpeg',
  );
}

let cached: Promise<FfmpegBinary> | undefined;

/**
 * The ffmpeg binary of this process, found once ({@link findFfmpegBinary}) and remembered. A
 * failed search is not remembered, so installing ffmpeg later helps without a restart.
 *
 * @example
 * const ffmpeg = await ffmpegBinary();
 * spawn(ffmpeg.path, ['-version']);
 */
export function ffmpegBinary(): Promise<FfmpegBinary> {
  if (!cached) {
    const search = findFfmpegBinary();
    cached = search;
    search.catch(() => {
      if (cached === search) cached = undefined;
    });
  }
  return cached;
}

interface RunFfmpegOptions {
  /** ffmpeg's arguments, without the program. */
  args: readonly string[];
  input?: ProcessInput | undefined;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** A binary to use instead of {@link ffmpegBinary}'s. */
  binaryPath?: string | undefined;
}

/**
 * Runs ffmpeg once; resolves when it exits 0. Otherwise throws a {@link GenerationError}:
 * `generation_failed` with the last lines of ffmpeg's stderr, `generator_timeout` (ffmpeg is
 * killed), `aborted`, or `generator_unavailable`.
 *
 * @example
 * await runFfmpeg({ args: ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc', '-frames:v', '1', 'x.jpg'], timeoutMs: 30_000 });
 */
export async function runFfmpeg(options: RunFfmpegOptions): Promise<void> {
  const binary = options.binaryPath ?? (await ffmpegBinary()).path;
  const outcome = await runProcess({
    argv: [binary, '-hide_banner', '-nostdin', ...options.args],
    input: options.input,
    timeoutMs: options.timeoutMs,
    signal: options.signal,
  });
  if (outcome.spawnError) {
    throw new GenerationError(
      'generator_unavailable',
      `ffmpeg could not be started (${outcome.spawnError.code})`,
      {
        cause: outcome.spawnError,
      },
    );
  }
  if (outcome.inputError !== undefined) {
    throw new GenerationError('generation_failed', 'the frames for ffmpeg could not be made', {
      cause: outcome.inputError,
    });
  }
  if (outcome.ended === 'timeout') {
    throw new GenerationError('generator_timeout', `ffmpeg did not finish within ${options.timeoutMs} ms`);
  }
  if (outcome.ended === 'aborted') {
    throw new GenerationError('aborted', 'the generation was aborted', { cause: options.signal?.reason });
  }
  if (outcome.exitCode !== 0) {
    const status = outcome.exitSignal ? `signal ${outcome.exitSignal}` : `exit code ${outcome.exitCode}`;
    const detail = lastLines(outcome.stderrTail, 3);
    throw new GenerationError('generation_failed', `ffmpeg failed (${status})${detail ? `: ${detail}` : ''}`);
  }
}

async function runsVersion(binary: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  const outcome = await runProcess({ argv: [binary, '-version'], timeoutMs: PROBE_TIMEOUT_MS, env });
  return outcome.ended === 'exited' && outcome.exitCode === 0;
}
