import { type ParseArgsConfig, parseArgs } from 'node:util';
import { secretKey } from '../protocol/signature.ts';
import { checkMode, parseMode } from '../receiver/file-modes.ts';
import { allowedHostsOf } from '../receiver/host-check.ts';
import { allowedOriginsOf } from '../receiver/origin-check.ts';
import { type DurationLimits, parseDuration } from './duration.ts';
import { parseSize } from './size.ts';

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
 * A process stream that goes quiet once its reader is gone (EPIPE, as after `| head -1`):
 * the command runs on and keeps its exit code, and Node prints no "Unhandled 'error'" trace.
 * Other write errors stay fatal, as Node makes them.
 */
function quietWhenClosed(stream: NodeJS.WriteStream): OutputStream {
  let closed = false;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    closed = true;
  });
  return {
    write: (chunk: string) => closed || stream.write(chunk),
    get isTTY() {
      return stream.isTTY;
    },
    get columns() {
      return stream.columns;
    },
  };
}

/** The process's stdout and stderr, for every command; see {@link quietWhenClosed}. */
export function processIo(): CliIo {
  return { stdout: quietWhenClosed(process.stdout), stderr: quietWhenClosed(process.stderr) };
}

// Besides C0, DEL and C1: the bidirectional controls, which can make a line read otherwise than
// it is stored, and the Unicode line and paragraph separators, which some viewers break on.
const UNICODE_FORMATTING = '\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069';
const CONTROLS = new RegExp(`[\\x00-\\x1f\\x7f-\\x9f${UNICODE_FORMATTING}]`, 'g');
const CONTROLS_BUT_LINES = new RegExp(`[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f${UNICODE_FORMATTING}]`, 'g');

/**
 * Text from a receiver or a sender made harmless to print: control characters (C0, DEL, C1)
 * shown as `\xNN` and bidirectional controls and Unicode line separators as `\uNNNN`, so an
 * answer cannot move the cursor, retitle the terminal, forge lines or reorder what is shown.
 * `keepLines` lets line feeds and tabs through, for a body printed as it is.
 *
 * @example
 * escapeControls('\u001b]0;pwned\u0007'); // '\\x1b]0;pwned\\x07'
 * escapeControls('cat_\u202egpj.exe'); // 'cat_\\u202egpj.exe'
 */
export function escapeControls(text: string, keepLines = false): string {
  return text.replace(keepLines ? CONTROLS_BUT_LINES : CONTROLS, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

const NOT_ESCAPED_BY_JSON = new RegExp(`[\\x7f-\\x9f${UNICODE_FORMATTING}]`, 'g');

/**
 * One NDJSON line. JSON escapes C0 controls but not DEL, C1 (U+009B is a CSI to some
 * terminals), bidirectional controls or U+2028, so those are escaped too: the same data,
 * safe to print on a terminal.
 *
 * @example
 * jsonLine({ status: 'ok\u009b2J' }); // '{"status":"ok\\u009b2J"}\n'
 */
export function jsonLine(value: unknown): string {
  const json = JSON.stringify(value).replace(
    NOT_ESCAPED_BY_JSON,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return `${json}\n`;
}

/**
 * One `mediahook` command. Adding a command is one file exporting one of these and one entry
 * in the registry (`commands.ts`); dispatch, `--help` and error reporting come from `main.ts`.
 *
 * @example
 * export const helloCommand: Command = {
 *   usage: 'Usage: mediahook hello [--name NAME]\n…',
 *   async run(argv, io) { io.stdout.write('hello\n'); return 0; },
 * };
 */
export interface Command {
  /** The whole text of `mediahook <name> --help`, ending in a newline. */
  readonly usage: string;
  /** Runs with the arguments after the command name; resolves to the exit code. */
  run(argv: string[], io: CliIo): Promise<number>;
}

/**
 * A command as the registry lists it: what `mediahook --help` shows, and how to load the rest.
 *
 * @example
 * const hello: CommandEntry = {
 *   name: 'hello', summary: 'Say hello',
 *   load: async () => (await import('./hello.ts')).helloCommand,
 * };
 */
export interface CommandEntry {
  /** The word after `mediahook`. */
  readonly name: string;
  /** One line for `mediahook --help`. */
  readonly summary: string;
  /** The command itself, loaded when it is about to run or show its usage. */
  load(): Promise<Command>;
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

/** What {@link parseCommandArgs} returns: `parseArgs`'s result for these options, with tokens. */
type ParsedCommandArgs<O extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: true; tokens: true }>
>;

/**
 * `parseArgs` in strict mode with its errors turned into {@link UsageError}s, without Node's
 * advice about `--`, which reads oddly to someone who only mistyped a flag; an option that
 * takes one value and is given two different ones is a {@link UsageError} too.
 *
 * @example
 * const { values, positionals } = parseCommandArgs(argv, { json: { type: 'boolean' } });
 */
export function parseCommandArgs<O extends Options>(argv: string[], options: O): ParsedCommandArgs<O> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: true, tokens: true });
  } catch (error) {
    const message = (error as Error).message;
    const cut = message.search(/\. To specify a positional argument/);
    const reason = cut > 0 ? message.slice(0, cut) : message;
    // Lower-case like every other message of ours ("unknown option '--colour'").
    throw new UsageError(reason.charAt(0).toLowerCase() + reason.slice(1));
  }
  // parseArgs keeps the last of a repeated option: two that disagree are a contradiction, not
  // a choice to make for the user (`--family A … --family B`).
  const seen = new Map<string, string | undefined>();
  for (const token of parsed.tokens) {
    if (token.kind !== 'option' || options[token.name]?.multiple === true) continue;
    if (seen.has(token.name) && seen.get(token.name) !== token.value) {
      // The values are not echoed: one may be a secret or a database URL with its password.
      throw new UsageError(`--${token.name} is given twice with different values: give it once`);
    }
    seen.set(token.name, token.value);
  }
  return parsed;
}

/**
 * The one URL argument of a command that POSTs to it: http: or https:, else a {@link UsageError}.
 *
 * @example
 * const url = urlArgument(positionals); // from `mediahook send URL …`
 */
export function urlArgument(positionals: readonly string[]): URL {
  if (positionals.length === 0) throw new UsageError('the URL is missing');
  if (positionals.length > 1)
    throw new UsageError(`one URL only; also got: ${positionals.slice(1).join(' ')}`);
  let url: URL;
  try {
    url = new URL(positionals[0]!);
  } catch {
    throw new UsageError(`"${positionals[0]}" is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`the URL must be http: or https:, not ${url.protocol}`);
  }
  return url;
}

/**
 * The `--secret` values, each a usable signing secret (`whsec_` and at least 16 bytes of key),
 * else a {@link UsageError}: refused before anything is sent.
 */
export function secretFlags(values: readonly string[] | undefined): string[] {
  for (const secret of values ?? []) {
    try {
      secretKey(secret);
    } catch (error) {
      throw new UsageError(`--secret: ${(error as Error).message}`);
    }
  }
  return [...(values ?? [])];
}

/**
 * A duration flag's value in milliseconds, or the fallback when the flag is absent; a bad
 * value is a {@link UsageError} naming the flag.
 *
 * @example
 * durationFlag('--timeout', values.timeout, 30_000, { min: 1 });
 */
export function durationFlag<F extends number | undefined>(
  flag: string,
  value: string | undefined,
  fallback: F,
  limits?: DurationLimits,
): number | F {
  if (value === undefined) return fallback;
  try {
    return parseDuration(value, limits);
  } catch (error) {
    throw new UsageError(`${flag}: ${(error as Error).message}`);
  }
}

/**
 * A port flag's value: decimal digits, 0 to 65535 (0 picks a free port); `fallback` when absent.
 *
 * @example
 * portFlag('--port', values.port, 9000);
 */
export function portFlag(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  // Not Number(): it reads '0x10' as 16, '1e3' as 1000 and '' as 0.
  const port = /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN;
  if (!(port <= 65535)) throw new UsageError(`${flag} takes 0 to 65535`);
  return port;
}

/**
 * A size flag's value in bytes (`64KiB`, `1GiB`), or undefined when the flag is absent; a bad
 * value is a {@link UsageError} naming the flag.
 *
 * @example
 * sizeFlag('--max-file-size', values['max-file-size']);
 */
export function sizeFlag(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  try {
    return parseSize(value);
  } catch (error) {
    throw new UsageError(`${flag}: ${(error as Error).message}`);
  }
}

/**
 * The `--allowed-host` values, each a host name, `.example.com` or `*`; a bad one is a
 * {@link UsageError} (a port, a URL).
 *
 * @example
 * allowedHostFlags(values['allowed-host']); // ['abc.tunnel.example']
 */
export function allowedHostFlags(values: readonly string[] | undefined): string[] {
  try {
    allowedHostsOf(values);
  } catch (error) {
    throw new UsageError(`--allowed-host: ${(error as Error).message}`);
  }
  return [...(values ?? [])];
}

/**
 * The `--allow-origin` values, each an origin as a browser sends it (`https://app.example`); a bad
 * one is a {@link UsageError}.
 *
 * @example
 * allowOriginFlags(values['allow-origin']); // ['https://app.example']
 */
export function allowOriginFlags(values: readonly string[] | undefined): string[] {
  try {
    allowedOriginsOf(values);
  } catch (error) {
    throw new UsageError(`--allow-origin: ${(error as Error).message}`);
  }
  return [...(values ?? [])];
}

/**
 * A permission flag's value (`0640`, octal) that keeps the owner's own access, or undefined when
 * the flag is absent; anything else is a {@link UsageError} naming the flag.
 *
 * @example
 * modeFlag('--file-mode', '0640', 'file'); // 0o640
 */
export function modeFlag(flag: string, value: string | undefined, kind: 'file' | 'dir'): number | undefined {
  if (value === undefined) return undefined;
  const mode = parseMode(value);
  if (mode === null) throw new UsageError(`${flag} takes an octal mode such as 0640, not "${value}"`);
  try {
    checkMode(mode, kind, flag);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return mode;
}
