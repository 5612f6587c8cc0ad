/** Reading a receiver's `Retry-After` header, as the sender does for every answer. */

/**
 * Milliseconds a `Retry-After` header asks for: delta-seconds or an HTTP date (RFC 9110
 * §10.2.3); null when absent or unreadable.
 *
 * @example
 * parseRetryAfter('120'); // 120000
 */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  // Any number of digits: a delay beyond every bound is held at the longest, not ignored.
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, Number.MAX_SAFE_INTEGER);
  // Date.parse reads nearly anything (`1.5` and `-1` as days of 2001, hence "retry now"); every
  // HTTP-date form (IMF-fixdate, RFC 850, asctime) starts with the day's name.
  if (!/^[A-Za-z]{3,9},? /.test(text)) return null;
  // asctime (`Sun Nov  6 08:49:37 1994`) carries no zone but means GMT; Date.parse would read
  // it as local time.
  const asctime = /^[A-Za-z]{3} [A-Za-z]{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/.test(text);
  const date = Date.parse(asctime ? `${text} GMT` : text);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}
