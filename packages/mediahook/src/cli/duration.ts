/**
 * Durations on the command line: `200ms`, `5s`, `5m`, `2h`, and comma-separated lists of them
 * (`5s,5m,30m`). Every command that takes a time (timeouts, retry schedules, tolerances)
 * reads it here, so they all accept and reject the same texts.
 */

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
type Unit = keyof typeof UNIT_MS;

/** The longest delay a Node.js timer can hold (about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;

export interface DurationLimits {
  /** Smallest accepted value in milliseconds; 0 by default. */
  min?: number;
  /** Largest accepted value in milliseconds; {@link MAX_TIMER_MS} by default. */
  max?: number;
}

/**
 * Milliseconds of a duration written as a number and a unit: `ms`, `s`, `m` or `h`. Decimals
 * are allowed (`1.5s`); the result is rounded to a whole millisecond. Throws a RangeError whose
 * message quotes the text and says what is expected.
 *
 * @example
 * parseDuration('200ms'); // 200
 * parseDuration('5m'); // 300000
 * parseDuration('1.5s'); // 1500
 * parseDuration('5', { min: 1 }); // throws: '"5" is not a duration: write a number and a unit …'
 */
export function parseDuration(text: string, limits: DurationLimits = {}): number {
  const trimmed = text.trim();
  const match = DURATION.exec(trimmed);
  if (!match) {
    const hint = /^\d+(?:\.\d+)?$/.test(trimmed) ? ` (did you mean ${trimmed}s?)` : '';
    throw new RangeError(
      `"${text}" is not a duration: write a number and a unit, as in 200ms, 5s, 5m or 2h${hint}`,
    );
  }
  const ms = Math.round(Number(match[1]) * UNIT_MS[match[2] as Unit]);
  const min = limits.min ?? 0;
  const max = limits.max ?? MAX_TIMER_MS;
  if (ms < min) throw new RangeError(`"${text}" is too short: at least ${formatDuration(min)}`);
  if (ms > max) throw new RangeError(`"${text}" is too long: at most ${formatDuration(max)}`);
  return ms;
}

/**
 * Milliseconds of each duration in a comma-separated list. An error names the item at fault
 * (counting from 1). Empty lists and empty items are refused.
 *
 * @example
 * parseDurationList('5s,5m,30m'); // [5000, 300000, 1800000]
 */
export function parseDurationList(text: string, limits: DurationLimits = {}): number[] {
  const items = text.split(',');
  if (text.trim() === '') throw new RangeError('an empty list of durations: write them as in 5s,5m,30m');
  return items.map((item, index) => {
    if (item.trim() === '') {
      throw new RangeError(`item ${index + 1} of "${text}" is empty: write the list as in 5s,5m,30m`);
    }
    try {
      return parseDuration(item, limits);
    } catch (error) {
      throw new RangeError(`item ${index + 1} of "${text}": ${(error as Error).message}`);
    }
  });
}

/**
 * A duration in the largest unit that writes it exactly (or with one decimal above a second):
 * the inverse of {@link parseDuration} for values it produces.
 *
 * @example
 * formatDuration(300000); // '5m'
 * formatDuration(1500); // '1.5s'
 * formatDuration(200); // '200ms'
 */
export function formatDuration(ms: number): string {
  for (const unit of ['h', 'm', 's'] as const) {
    const size = UNIT_MS[unit];
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  if (ms >= 1000 && (ms * 10) % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
