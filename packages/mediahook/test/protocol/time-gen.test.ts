/** `time_gen` stays opaque text; parseTimeGen is the convenience reading of the common forms. */
import { describe, expect, it } from 'vitest';
import { parseTimeGen } from '../../src/protocol/index.ts';

describe('parseTimeGen', () => {
  it.each([
    { text: '2026-11-22T10:00:00.123Z', iso: '2026-11-22T10:00:00.123Z' },
    { text: '2026-11-22T10:00:00Z', iso: '2026-11-22T10:00:00.000Z' },
    { text: '2026-11-22t10:00:00z', iso: '2026-11-22T10:00:00.000Z' },
    { text: '2026-11-22 10:00:00+02:00', iso: '2026-11-22T08:00:00.000Z' },
    { text: '2026-11-22T10:00:00.5-05:30', iso: '2026-11-22T15:30:00.500Z' },
    { text: '2026-11-22T10:00:00.123456789Z', iso: '2026-11-22T10:00:00.123Z' },
    { text: '  2026-11-22T10:00:00Z  ', iso: '2026-11-22T10:00:00.000Z' },
    { text: '1763805600', iso: '2025-11-22T10:00:00.000Z' },
    { text: '1763805600.25', iso: '2025-11-22T10:00:00.250Z' },
    { text: '1763805600123', iso: '2025-11-22T10:00:00.123Z' },
    { text: '0', iso: '1970-01-01T00:00:00.000Z' },
    // Eleven digits are still seconds, twelve are milliseconds.
    { text: '99999999999', iso: '5138-11-16T09:46:39.000Z' },
    { text: '100000000000', iso: '1973-03-03T09:46:40.000Z' },
    { text: '2024-02-29T00:00:00Z', iso: '2024-02-29T00:00:00.000Z' },
    // A leap second is read as the instant after :59.
    { text: '2016-12-31T23:59:60Z', iso: '2017-01-01T00:00:00.000Z' },
  ])('$text → $iso', ({ text, iso }) => {
    expect(parseTimeGen(text)?.toISOString()).toBe(iso);
  });

  it.each([
    '',
    'yesterday',
    '2026-11-22',
    '2026-11-22T10:00:00',
    '2026-11-22T10:00Z',
    '2026-13-01T00:00:00Z',
    '2026-00-10T00:00:00Z',
    '2026-11-32T00:00:00Z',
    // Days the month does not have are refused, not rolled over into the next month.
    '2026-02-29T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-11-22T24:00:00Z',
    '2026-11-22T10:60:00Z',
    '2026-11-22T10:00:00+2:00',
    '-1763805600',
    '1e9',
    '0x10',
    '12345678901234567',
    '1763805600.',
  ])('%j → null', (text) => {
    expect(parseTimeGen(text)).toBeNull();
  });
});
