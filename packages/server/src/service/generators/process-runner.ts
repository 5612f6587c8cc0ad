import { type ChildProcess, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';

/** What is written to the program's stdin: bytes, or a writer that streams them (and awaits drain). */
export type ProcessInput = string | Uint8Array | ((stdin: Writable) => Promise<void>);

interface RunProcessOptions {
  /** The program and its arguments; run directly, never through a shell. */
  argv: readonly string[];
  input?: ProcessInput | undefined;
  /** The program is killed after this long; the outcome then says `timeout`. */
  timeoutMs: number;
  /** Aborting kills the program; the outcome then says `aborted`. */
  signal?: AbortSignal | undefined;
  /**
   * Aborting kills the program at once with SIGKILL, without the grace a timeout gets: for a
   * program that must not go on (e.g. one filling the disk). The outcome then says `killed`.
   */
  killNow?: AbortSignal | undefined;
  cwd?: string | undefined;
  env?: NodeJS.ProcessEnv | undefined;
  /** Time between SIGTERM and SIGKILL when the program is killed. Default 2 s. */
  killGraceMs?: number | undefined;
  /**
   * Start the program in its own process group and kill the whole group, so the children of a
   * wrapper script die with it. POSIX only. Default false. When the program exits, whatever it
   * left running in its group is killed too, so nothing outlives a run.
   */
  killProcessGroup?: boolean | undefined;
  /** How much of the end of stderr is kept. Default 8 KiB. */
  stderrTailBytes?: number | undefined;
}

interface ProcessOutcome {
  /** `exited` when the program ended by itself (or could not start: see `spawnError`). */
  ended: 'exited' | 'timeout' | 'aborted' | 'killed';
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  /** The end of what the program wrote to stderr, decoded as UTF-8. */
  stderrTail: string;
  /** Set when the program could not be started (e.g. ENOENT). */
  spawnError?: NodeJS.ErrnoException;
  /** Set when a streaming input writer failed for a reason other than the program going away. */
  inputError?: unknown;
}

/** A stream error that only means the program stopped reading its stdin; its exit status says why. */
const CLOSED_PIPE_CODES = new Set([
  'EPIPE',
  'ECONNRESET',
  'ERR_STREAM_DESTROYED',
  'ERR_STREAM_WRITE_AFTER_END',
]);

/** How long to wait for stderr to close after the program exited: a grandchild may hold it open. */
const STDIO_CLOSE_WAIT_MS = 1000;

/**
 * Runs a program to completion with a time limit, an abort signal and the end of its stderr
 * captured. It never rejects: the outcome says how the program ended, and the caller turns that
 * into its own error.
 *
 * @example
 * const outcome = await runProcess({ argv: ['ffmpeg', '-version'], timeoutMs: 10_000 });
 * if (outcome.ended === 'exited' && outcome.exitCode === 0) console.log('ffmpeg works');
 */
export function runProcess(options: RunProcessOptions): Promise<ProcessOutcome> {
  const [program, ...args] = options.argv;
  if (program === undefined) throw new TypeError('runProcess needs a program in argv');
  if (options.signal?.aborted) {
    return Promise.resolve({ ended: 'aborted', exitCode: null, exitSignal: null, stderrTail: '' });
  }
  const useGroup = options.killProcessGroup === true && process.platform !== 'win32';
  const graceMs = options.killGraceMs ?? 2000;
  const tail = new TailBuffer(options.stderrTailBytes ?? 8192);

  return new Promise((resolve) => {
    let ended: ProcessOutcome['ended'] = 'exited';
    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let exited = false;
    let settled = false;
    let spawnError: NodeJS.ErrnoException | undefined;
    let inputError: unknown;
    const timers: NodeJS.Timeout[] = [];

    const child: ChildProcess = spawn(program, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', 'ignore', 'pipe'],
      detached: useGroup,
      windowsHide: true,
    });

    const signalChild = (signal: NodeJS.Signals) => {
      if (exited || child.pid === undefined) return;
      try {
        if (useGroup) process.kill(-child.pid, signal);
        else child.kill(signal);
      } catch {
        // The process (group) is already gone.
      }
    };
    const kill = (reason: 'timeout' | 'aborted') => {
      if (exited || ended !== 'exited') return;
      ended = reason;
      signalChild('SIGTERM');
      const escalation = setTimeout(() => signalChild('SIGKILL'), graceMs);
      escalation.unref();
      timers.push(escalation);
    };
    const onAbort = () => kill('aborted');
    const onKillNow = () => {
      if (exited) return;
      ended = 'killed';
      signalChild('SIGKILL');
    };

    const finish = () => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      options.killNow?.removeEventListener('abort', onKillNow);
      const outcome: ProcessOutcome = { ended, exitCode, exitSignal, stderrTail: tail.text() };
      if (spawnError) outcome.spawnError = spawnError;
      if (inputError !== undefined) outcome.inputError = inputError;
      resolve(outcome);
    };

    child.on('error', (error: NodeJS.ErrnoException) => {
      // Also emitted when a kill fails; only a failed start ends the run here.
      if (child.pid === undefined) {
        spawnError = error;
        exited = true;
        finish();
      }
    });
    child.on('exit', (code, signal) => {
      exited = true;
      exitCode = code;
      exitSignal = signal;
      // What the program started and left behind (a background job, a stuck grandchild) is in
      // its group: killed now, it cannot hold stderr open nor run on unseen. The group id stays
      // reserved while any member lives, so this cannot reach another process.
      if (useGroup && child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Nothing was left behind.
        }
      }
      const wait = setTimeout(() => {
        child.stderr?.destroy();
        finish();
      }, STDIO_CLOSE_WAIT_MS);
      timers.push(wait);
    });
    child.on('close', finish);
    child.stderr?.on('data', (chunk: Buffer) => tail.push(chunk));

    const timeout = setTimeout(() => kill('timeout'), options.timeoutMs);
    timers.push(timeout);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.killNow?.aborted) onKillNow();
    else options.killNow?.addEventListener('abort', onKillNow, { once: true });

    const stdin = child.stdin;
    if (!stdin) return;
    stdin.on('error', () => {
      // EPIPE and the like when the program exits without reading everything; its exit status tells.
    });
    const input = options.input;
    if (input === undefined) stdin.end();
    else if (typeof input === 'function') {
      input(stdin).then(
        () => stdin.end(),
        (error: unknown) => {
          if (isClosedPipe(error) || stdin.destroyed) return;
          inputError = error;
          stdin.destroy();
          signalChild('SIGKILL');
        },
      );
    } else stdin.end(input);
  });
}

/**
 * Writes one chunk and waits while the stream's buffer is full, so a fast producer cannot pile
 * up memory in front of a slow program. Rejects (code `EPIPE`) when the stream closes first.
 *
 * @example
 * for (const frame of frames()) await writeWithBackpressure(stdin, frame);
 */
export function writeWithBackpressure(stream: Writable, chunk: Uint8Array): Promise<void> {
  if (stream.destroyed || stream.writableEnded) return Promise.reject(closedPipeError());
  if (stream.write(chunk)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const cleanUp = () => {
      stream.off('drain', onDrain);
      stream.off('close', onClose);
    };
    const onDrain = () => {
      cleanUp();
      resolve();
    };
    const onClose = () => {
      cleanUp();
      reject(closedPipeError());
    };
    stream.on('drain', onDrain);
    stream.on('close', onClose);
  });
}

/** Longest text {@link lastLines} returns, in characters: it becomes a callback's message as it is. */
const MAX_DETAIL_CHARS = 1000;

/**
 * The last `count` non-empty lines of a program's output, joined with ` | ` for a one-line
 * message, made fit for a client to read: terminal colour codes and other control characters
 * are dropped, runs of white space become one space, and a result longer than `maxChars` keeps
 * its end (where a program says what went wrong) after a leading `…`.
 */
export function lastLines(text: string, count: number, maxChars = MAX_DETAIL_CHARS): string {
  const lines = text
    .split(/\r?\n|\r|\u2028|\u2029/)
    .map(cleanLine)
    .filter((line) => line !== '');
  const joined = lines.slice(-count).join(' | ');
  if (joined.length <= maxChars) return joined;
  let start = joined.length - (maxChars - 1);
  // Never begin with the second half of a surrogate pair.
  if (/[\uDC00-\uDFFF]/.test(joined[start] ?? '')) start++;
  return `…${joined.slice(start)}`;
}

/** ANSI escape sequences: CSI (colours, cursor moves), OSC (titles, links), and two-byte ones. */
const ESCAPE_SEQUENCE = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)|[@-_])/g;
const CONTROL_CHARACTERS = /[\u0001-\u001f\u007f-\u009f]+/g;

function cleanLine(line: string): string {
  return (
    line
      .replace(ESCAPE_SEQUENCE, '')
      // NUL shows as U+FFFD, as bytes that are not UTF-8 do: something unreadable was there.
      .replaceAll('\u0000', '\uFFFD')
      .replace(CONTROL_CHARACTERS, ' ')
      .replace(/\s+/g, ' ')
      .trim()
  );
}

function closedPipeError(): NodeJS.ErrnoException {
  return Object.assign(new Error('the program closed its input'), { code: 'EPIPE' });
}

function isClosedPipe(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && CLOSED_PIPE_CODES.has(code);
}

/** Keeps the last `limit` bytes of a stream without holding all of it. */
class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.chunks.length > 1 && this.size - this.chunks[0]!.length >= this.limit) {
      this.size -= this.chunks.shift()!.length;
    }
  }

  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.limit)).toString('utf8');
  }
}
