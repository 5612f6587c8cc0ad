/** Running a program: streamed input with backpressure, a program that stops reading, the stderr tail. */
import { describe, expect, it } from 'vitest';
import {
  lastLines,
  runProcess,
  writeWithBackpressure,
} from '../../../src/service/generators/process-runner.ts';

const node = (code: string) => [process.execPath, '-e', code];

describe('runProcess', () => {
  it('streams input no faster than the program reads it', async () => {
    let written = 0;
    const outcome = await runProcess({
      argv: node(
        'let n = 0; process.stdin.on("data", (c) => { n += c.length; }).on("end", () => console.error(n));',
      ),
      input: async (stdin) => {
        for (let i = 0; i < 64; i++) {
          await writeWithBackpressure(stdin, Buffer.alloc(256 * 1024, i));
          written += 256 * 1024;
          // Never more than the pipe's buffer ahead of the reader.
          expect(stdin.writableLength).toBeLessThanOrEqual(256 * 1024);
        }
      },
      timeoutMs: 20_000,
    });
    expect(outcome).toMatchObject({ ended: 'exited', exitCode: 0 });
    expect(outcome.stderrTail.trim()).toBe(String(written));
  });

  it('settles when the program exits without reading its input', async () => {
    const outcome = await runProcess({
      argv: node('process.exit(4)'),
      input: async (stdin) => {
        for (let i = 0; i < 1000; i++) await writeWithBackpressure(stdin, Buffer.alloc(1024 * 1024));
      },
      timeoutMs: 20_000,
    });
    expect(outcome).toMatchObject({ ended: 'exited', exitCode: 4 });
    expect(outcome.inputError).toBeUndefined();
  });

  it('reports a failing input writer and stops the program', async () => {
    const outcome = await runProcess({
      argv: node('setInterval(() => {}, 1000)'),
      input: async () => {
        throw new Error('frame renderer broke');
      },
      timeoutMs: 20_000,
    });
    expect((outcome.inputError as Error).message).toBe('frame renderer broke');
    expect(outcome.exitSignal).toBe('SIGKILL');
  });

  it('keeps only the end of a long stderr', async () => {
    const outcome = await runProcess({
      argv: node('for (let i = 0; i < 5000; i++) console.error("line " + i);'),
      timeoutMs: 20_000,
      stderrTailBytes: 100,
    });
    expect(outcome.stderrTail.length).toBeLessThanOrEqual(100);
    expect(lastLines(outcome.stderrTail, 2)).toBe('line 4998 | line 4999');
  });
});

describe('lastLines', () => {
  it('takes the last non-empty lines, trimmed, on one line', () => {
    expect(lastLines('a\r\n\n  b  \nc\n\n', 2)).toBe('b | c');
    expect(lastLines('', 3)).toBe('');
  });

  it('drops colour codes and control characters, and keeps the end of a long text', () => {
    expect(lastLines('\u001b[31mError:\u001b[0m\tbad\u0007 thing\u001b]0;title\u0007\n', 3)).toBe(
      'Error: bad thing',
    );
    expect(lastLines('bad\u0000input', 1)).toBe('bad\uFFFDinput');
    expect(lastLines(`${'a'.repeat(50)} the end`, 1, 10)).toBe('…a the end');
    // A cut never leaves half of a character made of two UTF-16 units.
    expect(lastLines(`${'🦊'.repeat(10)}`, 1, 6)).toBe('…🦊🦊');
  });
});
