import type { OutputStream } from './command.ts';

/** Uploads smaller than this finish too fast for a progress bar to be worth drawing. */
const PROGRESS_THRESHOLD_BYTES = 4 * 1024 * 1024;

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'] as const;

/**
 * A byte count in binary units with three significant digits at most.
 *
 * @example
 * formatBytes(512); // '512 B'
 * formatBytes(5 * 1024 * 1024); // '5.00 MiB'
 */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${bytes} B`;
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${UNITS[unit]}`;
}

interface ProgressState {
  sent: number;
  total: number;
  elapsedMs: number;
  /** Columns available; the bar shrinks to fit. */
  columns: number;
}

/**
 * One line of progress: a bar, bytes sent of the total, percentage and mean rate.
 *
 * @example
 * renderProgress({ sent: 5 << 20, total: 10 << 20, elapsedMs: 1000, columns: 80 });
 * // '[##########..........]  50%  5.00 MiB / 10.0 MiB  5.00 MiB/s' (bar width depends on columns)
 */
export function renderProgress(state: ProgressState): string {
  const fraction = state.total > 0 ? Math.min(1, state.sent / state.total) : 1;
  const percent = `${Math.floor(fraction * 100)}%`.padStart(4);
  const rate = state.elapsedMs > 0 ? (state.sent * 1000) / state.elapsedMs : 0;
  const text = `${percent}  ${formatBytes(state.sent)} / ${formatBytes(state.total)}  ${formatBytes(Math.round(rate))}/s`;
  const barWidth = Math.min(40, state.columns - text.length - 4);
  if (barWidth < 5) return text.trimStart().slice(0, Math.max(0, state.columns - 1));
  const filled = Math.round(fraction * barWidth);
  return `[${'#'.repeat(filled)}${'.'.repeat(barWidth - filled)}] ${text}`;
}

/**
 * A progress line redrawn in place on a terminal, at most every 100 ms. Draws nothing unless
 * the stream is a TTY, so logs and pipes never receive carriage returns.
 *
 * @example
 * const bar = new ProgressBar(process.stderr, encoded.contentLength);
 * bar.update(bytesSoFar);
 * bar.finish();
 */
export class ProgressBar {
  readonly #stream: OutputStream;
  readonly #total: number;
  readonly #started = Date.now();
  readonly #enabled: boolean;
  #lastDraw = 0;
  #drawn = false;

  constructor(stream: OutputStream, total: number, threshold = PROGRESS_THRESHOLD_BYTES) {
    this.#stream = stream;
    this.#total = total;
    this.#enabled = stream.isTTY === true && total > threshold;
  }

  get enabled(): boolean {
    return this.#enabled;
  }

  update(sent: number): void {
    if (!this.#enabled) return;
    const now = Date.now();
    if (now - this.#lastDraw < 100 && sent < this.#total) return;
    this.#lastDraw = now;
    this.#draw(sent, now);
  }

  /** Clears the line so what follows starts on a clean line. */
  finish(): void {
    if (!this.#enabled || !this.#drawn) return;
    this.#stream.write('\r\x1b[2K');
    this.#drawn = false;
  }

  #draw(sent: number, now: number): void {
    // A pseudo-terminal may report 0 columns: treat that as unknown.
    const columns = this.#stream.columns || 80;
    const line = renderProgress({ sent, total: this.#total, elapsedMs: now - this.#started, columns });
    this.#stream.write(`\r\x1b[2K${line}`);
    this.#drawn = true;
  }
}
