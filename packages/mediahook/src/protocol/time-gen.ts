const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * Reads a `time_gen` text as a time when it is RFC 3339 or Unix seconds / milliseconds; null
 * otherwise. `time_gen` stays opaque text on the wire: this is a convenience only.
 * Unix numbers of 12 or more digits are read as milliseconds, shorter ones as seconds.
 *
 * @example
 * parseTimeGen('2026-11-22T10:00:00.123Z')?.toISOString(); // '2026-11-22T10:00:00.123Z'
 * parseTimeGen('1763805600')?.getTime();                   // 1763805600000
 */
export function parseTimeGen(text: string): Date | null {
  const trimmed = text.trim();
  if (/^\d{1,16}(\.\d+)?$/.test(trimmed)) {
    const value = Number(trimmed);
    const integerDigits = trimmed.split('.')[0]!.length;
    const date = new Date(integerDigits >= 12 ? value : value * 1000);
    return Number.isNaN(date.getTime()) ? null : date;
  }
  const match = RFC3339.exec(trimmed);
  if (!match) return null;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  // Date would roll 2026-02-30 over into March: check the day against the month instead.
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 60) {
    return null;
  }
  // A leap second (:60) has no Date of its own: it is read as the instant after :59.
  const normalized = second === 60 ? trimmed.replace(/:60(?=[.Zz+-])/, ':59') : trimmed;
  const date = new Date(normalized.replace(' ', 'T'));
  if (Number.isNaN(date.getTime())) return null;
  return second === 60 ? new Date(date.getTime() + 1000) : date;
}
