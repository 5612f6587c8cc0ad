import { lstat, mkdir, rm } from 'node:fs/promises';
import { GenerationError } from './generation-error.ts';
import type { GeneratedMedia, GenerateOptions, GenerationRequest, Generator } from './generator.ts';
import { failIfRequested, outputPathFor, throwIfAborted } from './generator.ts';
import { checkGeneratedFile } from './output-check.ts';
import { lastLines, runProcess } from './process-runner.ts';

export interface CommandGeneratorOptions {
  /** The program and its arguments, e.g. `['python3', 'model.py']`; run directly, never through a shell. */
  command: readonly string[];
  /** The program is killed after this long (code `generator_timeout`). Default 5 min. */
  timeoutMs?: number | undefined;
  /** Time between SIGTERM and SIGKILL when the program is killed. Default 5 s. */
  killGraceMs?: number;
  /** Working directory of the program. Default: the service's. */
  cwd?: string;
  /** Environment of the program. Default: the service's. */
  env?: NodeJS.ProcessEnv;
  /** How many of the last stderr lines go into the failure message. Default 3. */
  stderrLines?: number;
  /**
   * Largest result file, in bytes. The file is watched while the program runs, and a program
   * whose file grows past this is killed at once (`bad_output`), so it cannot fill the disk.
   * Default 1 GiB, the largest file a receiver takes by default.
   */
  maxOutputBytes?: number | undefined;
}

/** The default of {@link CommandGeneratorOptions.maxOutputBytes}. */
const DEFAULT_MAX_OUTPUT_BYTES = 1024 ** 3;

/** How often the result file's size is looked at while the program runs. */
const OUTPUT_WATCH_MS = 200;

/** The JSON document a command receives on stdin, one per run. */
export interface CommandInput {
  id_gen: string;
  kind: GenerationRequest['kind'];
  family: GenerationRequest['family'];
  prompt: string;
  /** Absolute path where the program must write its result: `….jpg` for an image, `….mp4` for a video. */
  output_path: string;
}

/**
 * Plugs any program in as the generator: it is started once per operation with a
 * {@link CommandInput} as JSON on stdin, writes the result file at `output_path` and exits 0.
 * A non-zero exit fails the generation with the program's last stderr lines as the message; a
 * missing, empty or wrongly typed file (judged by its bytes) is `bad_output`; a program that
 * runs too long is killed, with its children (its process group), as `generator_timeout`.
 * `fail_with` fails the operation without starting the program.
 *
 * @example
 * const generator = new CommandGenerator({ command: ['python3', '/opt/model/generate.py'], timeoutMs: 600_000 });
 * await generator.generate({ id_gen, kind: 'image', family: 'A', prompt: 'a red fox' }, { workDir: './data/work' });
 */
export class CommandGenerator implements Generator {
  private readonly options: CommandGeneratorOptions;

  constructor(options: CommandGeneratorOptions) {
    if (options.command.length === 0 || options.command[0] === '') {
      throw new TypeError('a command generator needs a program to run');
    }
    this.options = options;
  }

  async generate(request: GenerationRequest, options: GenerateOptions): Promise<GeneratedMedia> {
    failIfRequested(request);
    throwIfAborted(options.signal);
    const outputPath = outputPathFor(options.workDir, request);
    await mkdir(options.workDir, { recursive: true });
    // A file left by an earlier attempt must not pass for this run's output.
    await rm(outputPath, { recursive: true, force: true });

    const input: CommandInput = {
      id_gen: request.id_gen,
      kind: request.kind,
      family: request.family,
      prompt: request.prompt,
      output_path: outputPath,
    };
    const timeoutMs = this.options.timeoutMs ?? 300_000;
    const maxBytes = this.options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const watch = watchOutputSize(outputPath, maxBytes);
    const outcome = await runProcess({
      argv: this.options.command,
      input: `${JSON.stringify(input)}\n`,
      timeoutMs,
      signal: options.signal,
      killNow: watch.tooLarge,
      cwd: this.options.cwd,
      env: this.options.env,
      killGraceMs: this.options.killGraceMs ?? 5000,
      killProcessGroup: true,
    }).finally(watch.stop);
    try {
      if (outcome.spawnError) {
        throw new GenerationError(
          'generator_unavailable',
          `the generator could not be started (${describeSpawnError(outcome.spawnError)})`,
          { cause: outcome.spawnError },
        );
      }
      if (outcome.ended === 'killed') throw tooLargeError(maxBytes);
      if (outcome.ended === 'timeout') {
        throw new GenerationError(
          'generator_timeout',
          `the generator did not finish within ${formatMs(timeoutMs)}`,
        );
      }
      if (outcome.ended === 'aborted') {
        throw new GenerationError('aborted', 'the generation was aborted', { cause: options.signal?.reason });
      }
      if (outcome.exitCode !== 0) {
        const status = outcome.exitSignal
          ? `killed by ${outcome.exitSignal}`
          : `exit code ${outcome.exitCode}`;
        const detail = lastLines(outcome.stderrTail, this.options.stderrLines ?? 3);
        throw new GenerationError(
          'generation_failed',
          `the generator failed (${status})${detail ? `: ${detail}` : ''}`,
        );
      }
      const media = await checkGeneratedFile(outputPath, request.kind, 'the generator');
      // Written faster than the watch looks, or just before the program exited.
      if (media.bytes > maxBytes) throw tooLargeError(maxBytes);
      return media;
    } catch (error) {
      // Whatever the program left there (a file, a directory) goes; a failure to remove it
      // must not replace the error, whose text the client gets.
      await rm(outputPath, { recursive: true, force: true }).catch(() => {});
      throw error;
    }
  }
}

/**
 * Looks at the size of `path` every {@link OUTPUT_WATCH_MS} and aborts `tooLarge` once it
 * passes `maxBytes`. `stop` ends the watch.
 */
function watchOutputSize(path: string, maxBytes: number): { tooLarge: AbortSignal; stop: () => void } {
  const controller = new AbortController();
  let looking = false;
  const timer = setInterval(() => {
    if (looking || controller.signal.aborted) return;
    looking = true;
    lstat(path).then(
      (info) => {
        looking = false;
        if (info.size > maxBytes) controller.abort();
      },
      () => {
        looking = false; // Not written yet.
      },
    );
  }, OUTPUT_WATCH_MS);
  return { tooLarge: controller.signal, stop: () => clearInterval(timer) };
}

function tooLargeError(maxBytes: number): GenerationError {
  return new GenerationError(
    'bad_output',
    `the generator wrote a file larger than ${formatBytes(maxBytes)}, the limit; it was stopped`,
  );
}

/** A spawn failure in words a client can read, with no local path in it. */
function describeSpawnError(error: NodeJS.ErrnoException): string {
  if (error.code === 'ENOENT') return 'ENOENT: the program or its working directory does not exist';
  if (error.code === 'EACCES') return 'EACCES: the program is not executable';
  return error.code ?? 'unknown error';
}

function formatBytes(bytes: number): string {
  for (const [unit, size] of [
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size} ${unit}`;
  }
  return `${bytes} bytes`;
}

function formatMs(ms: number): string {
  return ms >= 1000 && ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/**
 * A {@link CommandGenerator} for a program given as an argument array.
 *
 * @example
 * const generator = commandGenerator(['python3', 'model.py'], { timeoutMs: 600_000 });
 */
export function commandGenerator(
  command: readonly string[],
  options: Omit<CommandGeneratorOptions, 'command'> = {},
): Generator {
  return new CommandGenerator({ ...options, command });
}
