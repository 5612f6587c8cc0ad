import { describe, expect, it } from 'vitest';
import { formatDuration, MAX_TIMER_MS, parseDuration, parseDurationList } from '../../src/cli/duration.ts';

describe('parseDuration', () => {
  it.each([
    ['200ms', 200],
    ['0ms', 0],
    ['5s', 5_000],
    ['1.5s', 1_500],
    ['0.25s', 250],
    ['5m', 300_000],
    ['30m', 1_800_000],
    ['2h', 7_200_000],
    ['10h', 36_000_000],
    [' 5s ', 5_000],
    ['1.0005s', 1_001],
  ])('%j is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    ['', 'is not a duration'],
    ['5', 'did you mean 5s?'],
    ['1.5', 'did you mean 1.5s?'],
    ['5 s', 'is not a duration'],
    ['5S', 'is not a duration'],
    ['5sec', 'is not a duration'],
    ['5d', 'is not a duration'],
    ['-5s', 'is not a duration'],
    ['.5s', 'is not a duration'],
    ['1e3ms', 'is not a duration'],
    ['Infinityh', 'is not a duration'],
    ['ms', 'is not a duration'],
    ['1000h', 'too long'],
  ])('%j is refused (%s)', (text, message) => {
    expect(() => parseDuration(text)).toThrow(RangeError);
    expect(() => parseDuration(text)).toThrow(message);
  });

  it('applies limits', () => {
    expect(() => parseDuration('0s', { min: 1 })).toThrow('"0s" is too short: at least 1ms');
    expect(() => parseDuration('2h', { max: 3_600_000 })).toThrow('"2h" is too long: at most 1h');
    expect(parseDuration(`${MAX_TIMER_MS}ms`)).toBe(MAX_TIMER_MS);
  });
});

describe('parseDurationList', () => {
  it('reads the default retry schedule', () => {
    expect(parseDurationList('5s,5m,30m,2h,5h,10h,10h')).toEqual([
      5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
    ]);
  });

  it('allows spaces around items and a single item', () => {
    expect(parseDurationList('5s, 5m')).toEqual([5_000, 300_000]);
    expect(parseDurationList('200ms')).toEqual([200]);
  });

  it.each([
    ['', 'an empty list'],
    ['5s,,5m', 'item 2 of "5s,,5m" is empty'],
    ['5s,5m,', 'item 3 of "5s,5m," is empty'],
    ['5s,5x', 'item 2 of "5s,5x": "5x" is not a duration'],
  ])('%j is refused', (text, message) => {
    expect(() => parseDurationList(text)).toThrow(message);
  });
});

describe('formatDuration', () => {
  it.each([
    [200, '200ms'],
    [1_500, '1.5s'],
    [5_000, '5s'],
    [90_000, '90s'],
    [300_000, '5m'],
    [7_200_000, '2h'],
    [1_234, '1234ms'],
  ])('%d ms is %j and reads back', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    expect(parseDuration(text)).toBe(ms);
  });
});
