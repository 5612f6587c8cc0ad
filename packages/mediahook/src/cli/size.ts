/**
 * Sizes on the command line: plain bytes (`65536`) or a number and a binary unit (`64KiB`,
 * `16MiB`, `1GiB`; `KB`/`MB`/`GB` are read as the same binary units, as most people mean them).
 */

const UNIT_BYTES: Record<string, number> = {
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
};

const SIZE = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i;

/**
 * Bytes of a size text. Throws a RangeError that quotes the text.
 *
 * @example
 * parseSize('64KiB'); // 65536
 * parseSize('1GiB'); // 1073741824
 */
export function parseSize(text: string): number {
  const match = SIZE.exec(text.trim());
  const unit = UNIT_BYTES[(match?.[2] ?? '').toLowerCase() || 'b'];
  if (!match || unit === undefined) {
    throw new RangeError(
      `"${text}" is not a size: write bytes, or a number and a unit, as in 64KiB, 16MiB or 1GiB`,
    );
  }
  const bytes = Math.floor(Number(match[1]) * unit);
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new RangeError(`"${text}" is not a usable size`);
  return bytes;
}
