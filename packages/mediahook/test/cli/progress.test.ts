import { describe, expect, it } from 'vitest';
import type { OutputStream } from '../../src/cli/command.ts';
import { formatBytes, ProgressBar, renderProgress } from '../../src/cli/progress.ts';

function recorder(isTTY: boolean): OutputStream & { written: string } {
  const stream = {
    written: '',
    isTTY,
    columns: 80,
    write(chunk: string) {
      stream.written += chunk;
      return true;
    },
  };
  return stream;
}

describe('formatBytes', () => {
  it.each([
    [0, '0 B'],
    [1023, '1023 B'],
    [1024, '1.00 KiB'],
    [8 * 1024, '8.00 KiB'],
    [5 * 1024 * 1024, '5.00 MiB'],
    [150 * 1024 * 1024, '150 MiB'],
    [1024 ** 3, '1.00 GiB'],
  ])('%d bytes is %j', (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

describe('renderProgress', () => {
  it('shows the bar, the percentage, the bytes and the rate', () => {
    const line = renderProgress({ sent: 5 << 20, total: 10 << 20, elapsedMs: 1000, columns: 80 });
    expect(line).toMatch(/^\[#+\.+\] +50% {2}5\.00 MiB \/ 10\.0 MiB {2}5\.00 MiB\/s$/);
    expect(line.length).toBeLessThanOrEqual(80);
  });

  it('drops the bar on a narrow terminal', () => {
    const line = renderProgress({ sent: 1, total: 4, elapsedMs: 0, columns: 30 });
    expect(line.startsWith('[')).toBe(false);
    expect(line.length).toBeLessThan(30);
  });
});

describe('ProgressBar', () => {
  it('writes nothing when the stream is not a terminal', () => {
    const stream = recorder(false);
    const bar = new ProgressBar(stream, 100 << 20);
    bar.update(50 << 20);
    bar.update(100 << 20);
    bar.finish();
    expect(bar.enabled).toBe(false);
    expect(stream.written).toBe('');
  });

  it('writes nothing for a small upload', () => {
    const stream = recorder(true);
    const bar = new ProgressBar(stream, 1 << 20);
    bar.update(1 << 20);
    bar.finish();
    expect(stream.written).toBe('');
  });

  it('redraws in place on a terminal and clears the line at the end', () => {
    const stream = recorder(true);
    const bar = new ProgressBar(stream, 10 << 20);
    bar.update(1 << 20);
    bar.update(2 << 20); // within 100 ms of the last draw: skipped
    bar.update(10 << 20); // the end is always drawn
    bar.finish();
    const draws = stream.written.split('\r\x1b[2K').filter(Boolean);
    expect(draws).toHaveLength(2);
    expect(draws[1]).toContain('100%');
    expect(stream.written.endsWith('\r\x1b[2K')).toBe(true);
  });
});
