import { randomBytes } from 'node:crypto';

/**
 * UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then randomness. Identifiers made here sort
 * by creation time, also within one millisecond (a 12-bit counter in `rand_a`, RFC 9562
 * §6.2 method 1), so a store indexed by them appends instead of scattering inserts.
 */

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MAX_MS = 2 ** 48 - 1;
const MAX_COUNTER = 0xfff;

function randomCounterStart(): number {
  // Start in the lower half so a burst in one millisecond has room to count up.
  return randomBytes(2).readUInt16BE(0) & 0x7ff;
}

/**
 * A UUIDv7 generator over a clock. Its identifiers strictly increase, even when the clock steps
 * back or many are made in one millisecond (the timestamp then runs slightly ahead of the
 * clock rather than lose the order).
 *
 * @example
 * const fixed = uuidv7Generator(() => Date.UTC(2025, 0, 1));
 * fixed(); // '01941f29-7c00-7…'
 */
export function uuidv7Generator(clock: () => number = Date.now): () => string {
  let lastMs = -1;
  let counter = 0;
  return () => {
    let ms = Math.max(Math.floor(clock()), lastMs);
    if (ms === lastMs) {
      counter += 1;
      if (counter > MAX_COUNTER) {
        ms += 1;
        counter = randomCounterStart();
      }
    } else {
      counter = randomCounterStart();
    }
    if (ms < 0 || ms > MAX_MS) throw new RangeError(`a UUIDv7 cannot hold the time ${ms} ms`);
    lastMs = ms;

    const bytes = randomBytes(16);
    bytes.writeUIntBE(ms, 0, 6);
    bytes[6] = 0x70 | (counter >> 8);
    bytes[7] = counter & 0xff;
    bytes[8] = 0x80 | (bytes[8]! & 0x3f);
    const hex = bytes.toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
}

/**
 * A new UUIDv7 string (lower-case hex with hyphens; time-ordered; no `.`), from the
 * process-wide generator on the system clock.
 *
 * @example
 * uuidv7(); // '01935f3e-8a1c-7b2d-9f00-4c8e2a6b1d37'
 */
export const uuidv7: () => string = uuidv7Generator();

/**
 * Whether a text is a UUIDv7 in the canonical lower-case form.
 *
 * @example
 * isUuidv7(uuidv7()); // true
 * isUuidv7('op-1'); // false
 */
export function isUuidv7(text: string): boolean {
  return UUID_V7.test(text);
}

/**
 * The creation time of a UUIDv7, in Unix milliseconds; null when the text is not one.
 *
 * @example
 * uuidv7Time(uuidv7Generator(() => 1_700_000_000_000)()); // 1700000000000
 */
export function uuidv7Time(text: string): number | null {
  if (!isUuidv7(text)) return null;
  return Number.parseInt(text.slice(0, 8) + text.slice(9, 13), 16);
}
