import { type ParseArgsConfig, parseArgs } from 'node:util';
import { type DurationLimits, parseDuration } from './duration.ts';

/** Where a command writes: the process streams, or anything with the same shape in a test. */
export interface OutputStream {
  write(chunk: string): unknown;
  /** True when the stream is a terminal: progress bars and escapes only then. */
  isTTY?: boolean;
  /** Terminal width, when known. */
  columns?: number;
}

export interface CliIo {
  stdout: OutputStream;
  stderr: OutputStream;
}

/**
 * One `mediahook` command. Adding a command is one file exporting one of these and one line
 * in the registry (`commands.ts`); dispatch, `--help` and error reporting come from `main.ts`.
 *
 * @example
 * export const hello: Command = {
 *   name: 'hello', summary: 'Say hello', usage: 'mediahook hello [--name NAME]\n…',
 *   async run(argv, io) { io.stdout.write('hello\n'); return 0; },
 * };
 */
export interface Command {
  /** The word after `mediahook`. */
  readonly name: string;
  /** One line for `mediahook --help`. */
  readonly summary: string;
  /** The whole text of `mediahook <name> --help`, ending in a newline. */
  readonly usage: string;
  /** Runs with the arguments after the command name; resolves to the exit code. */
  run(argv: string[], io: CliIo): Promise<number>;
}

/**
 * Wrong use of the command line: main prints the message, points at `--help` and exits 2.
 *
 * @example
 * throw new UsageError('--family is required (A or B)');
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * `parseArgs` in strict mode with its errors turned into {@link UsageError}s, without Node's
 * advice about `--`, which reads oddly to someone who only mistyped a flag.
 *
 * @example
 * const { values, positionals } = parseCommandArgs(argv, { json: { type: 'boolean' } });
 */
export function parseCommandArgs<O extends Options>(argv: string[], options: O) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: true });
  } catch (error) {
    const message = (error as Error).message;
    const cut = message.search(/\. To specify a positional argument/);
    throw new UsageError(cut > 0 ? message.slice(0, cut) : message);
  }
}

/**
 * A duration flag's value in milliseconds, or the fallback when the flag is absent; a bad
 * value is a {@link UsageError} naming the flag.
 *
 * @example
 * durationFlag('--timeout', values.timeout, 30_000, { min: 1 });
 */
export function durationFlag(
  flag: string,
  value: string | undefined,
  fallback: number,
  limits?: DurationLimits,
): number {
  if (value === undefined) return fallback;
  try {
    return parseDuration(value, limits);
  } catch (error) {
    throw new UsageError(`${flag}: ${(error as Error).message}`);
  }
}
