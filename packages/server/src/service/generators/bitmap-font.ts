/**
 * A 5×7 bitmap font for printable ASCII, defined here as data so that rendering text needs no
 * system font. Each glyph is 7 rows, top to bottom, written as two hex digits per row; bit 4 of
 * a row (0x10) is the leftmost column, bit 0 (0x01) the rightmost. The letters with a
 * descender (g, p, q, y) are drawn {@link DESCENT} rows lower than the others.
 */

export const GLYPH_WIDTH = 5;
export const GLYPH_HEIGHT = 7;

/** Horizontal distance from one character to the next, in font pixels (one column of space). */
export const GLYPH_ADVANCE = 6;

/** Rows a descending letter reaches below the others. */
export const DESCENT = 2;

/** Vertical distance from one line to the next, in font pixels (descent plus one row of space). */
export const LINE_ADVANCE = 10;

const FIRST_CODE = 0x20;

/** Glyphs of U+0020 to U+007E, in order. */
const ASCII_GLYPHS = [
  '00000000000000', // space
  '04040404040004', // !
  '0a0a0a00000000', // "
  '0a0a1f0a1f0a0a', // #
  '040f140e051e04', // $
  '18190204081303', // %
  '0c12140815120d', // &
  '0c040800000000', // '
  '02040808080402', // (
  '08040202020408', // )
  '0004150e150400', // *
  '0004041f040400', // +
  '000000000c0408', // ,
  '0000001f000000', // -
  '00000000000c0c', // .
  '00010204081000', // /
  '0e11131519110e', // 0
  '040c040404040e', // 1
  '0e11010204081f', // 2
  '1f02040201110e', // 3
  '02060a121f0202', // 4
  '1f101e0101110e', // 5
  '0608101e11110e', // 6
  '1f010204080808', // 7
  '0e11110e11110e', // 8
  '0e11110f01020c', // 9
  '000c0c000c0c00', // :
  '000c0c000c0408', // ;
  '02040810080402', // <
  '00001f001f0000', // =
  '08040201020408', // >
  '0e110102040004', // ?
  '0e11010d15150e', // @
  '0e1111111f1111', // A
  '1e11111e11111e', // B
  '0e11101010110e', // C
  '1c12111111121c', // D
  '1f10101e10101f', // E
  '1f10101e101010', // F
  '0e11101711110f', // G
  '1111111f111111', // H
  '0e04040404040e', // I
  '0702020202120c', // J
  '11121418141211', // K
  '1010101010101f', // L
  '111b1515111111', // M
  '11111915131111', // N
  '0e11111111110e', // O
  '1e11111e101010', // P
  '0e11111115120d', // Q
  '1e11111e141211', // R
  '0f10100e01011e', // S
  '1f040404040404', // T
  '1111111111110e', // U
  '11111111110a04', // V
  '1111111515150a', // W
  '11110a040a1111', // X
  '1111110a040404', // Y
  '1f01020408101f', // Z
  '0e08080808080e', // [
  '00100804020100', // backslash
  '0e02020202020e', // ]
  '040a1100000000', // ^
  '0000000000001f', // _
  '08040200000000', // `
  '00000e010f110f', // a
  '1010161911111e', // b
  '00000e1010110e', // c
  '01010d1311110f', // d
  '00000e111f100e', // e
  '0609081c080808', // f
  '0f1111110f010e', // g, drawn {@link DESCENT} rows lower
  '10101619111111', // h
  '04000c0404040e', // i
  '0200060202120c', // j
  '10101214181412', // k
  '0c04040404040e', // l
  '00001a15151111', // m
  '00001619111111', // n
  '00000e1111110e', // o
  '1e1111111e1010', // p, drawn {@link DESCENT} rows lower
  '0f1111110f0101', // q, drawn {@link DESCENT} rows lower
  '00001619101010', // r
  '00000e100e011e', // s
  '08081c08080906', // t
  '0000111111130d', // u
  '00001111110a04', // v
  '0000111115150a', // w
  '0000110a040a11', // x
  '111111110f010e', // y, drawn {@link DESCENT} rows lower
  '00001f0204081f', // z
  '02040408040402', // {
  '04040404040404', // |
  '08040402040408', // }
  '00000815020000', // ~
];

/** Drawn for any character the font has no glyph for: a box with a cross inside. */
const PLACEHOLDER_GLYPH = '1f111b151b111f';

const decode = (hex: string): Uint8Array =>
  Uint8Array.from(hex.match(/../g) ?? [], (pair) => Number.parseInt(pair, 16));

const GLYPHS = ASCII_GLYPHS.map(decode);
const PLACEHOLDER = decode(PLACEHOLDER_GLYPH);

/**
 * The rows of a character's glyph (7 bytes, bit 4 leftmost); the placeholder glyph for anything
 * outside printable ASCII.
 *
 * @example
 * glyphRows('A'); // Uint8Array [0x0e, 0x11, 0x11, 0x11, 0x1f, 0x11, 0x11]
 */
export function glyphRows(char: string): Uint8Array {
  const code = char.codePointAt(0) ?? 0;
  return GLYPHS[code - FIRST_CODE] ?? PLACEHOLDER;
}

const DESCENDING = new Set(['g', 'p', 'q', 'y']);

/**
 * How many rows lower than the others a character is drawn: {@link DESCENT} for the letters
 * with a descender, 0 for the rest.
 */
export function glyphDrop(char: string): number {
  return DESCENDING.has(char) ? DESCENT : 0;
}

/** Whether the font has a glyph of its own for this character. */
export function hasGlyph(char: string): boolean {
  const code = char.codePointAt(0) ?? 0;
  return char.length === 1 && code >= FIRST_CODE && code < FIRST_CODE + GLYPHS.length;
}
