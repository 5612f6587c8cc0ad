/**
 * Fitting a prompt into a rectangle with the bitmap font: the largest scale at which the
 * word-wrapped text fits, or the smallest scale with the text cut short and marked `...`.
 */
import { DESCENT, GLYPH_ADVANCE, GLYPH_HEIGHT, GLYPH_WIDTH, LINE_ADVANCE } from './bitmap-font.ts';

/** Height of one line of text, descenders included, in font pixels. */
const LINE_HEIGHT = GLYPH_HEIGHT + DESCENT;

/** Lines of text at a scale (each font pixel drawn as `scale`×`scale` image pixels). */
interface TextLayout {
  lines: string[];
  scale: number;
  /** True when the text did not fit even at the smallest scale and was cut short. */
  truncated: boolean;
}

interface FitOptions {
  /** The rectangle, in image pixels. */
  width: number;
  height: number;
  /** Largest and smallest scale tried. */
  maxScale: number;
  minScale: number;
}

/** Typographic characters with an obvious ASCII stand-in. */
const ASCII_STAND_INS: Record<string, string> = {
  '\u2018': "'",
  '\u2019': "'",
  '\u201a': ',',
  '\u201c': '"',
  '\u201d': '"',
  '\u201e': '"',
  '\u2013': '-',
  '\u2014': '-',
  '\u2212': '-',
  '\u2044': '/',
  '\u2022': '*',
  '\u00a0': ' ',
  '\u00ab': '"',
  '\u00bb': '"',
  '\u00d7': 'x',
  '\u00df': 'ss',
};

const STAND_IN_PATTERN = new RegExp(`[${Object.keys(ASCII_STAND_INS).join('')}]`, 'g');

/**
 * Text as the font can draw it: accents dropped (`café` → `cafe`), common typographic
 * characters replaced by ASCII, tabs and other control characters as spaces, line breaks
 * kept. Characters without an ASCII form stay and are drawn as the placeholder glyph.
 *
 * @example
 * toFontText('“Crème brûlée” – 2×'); // '"Creme brulee" - 2x'
 */
export function toFontText(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(STAND_IN_PATTERN, (char) => ASCII_STAND_INS[char] ?? char)
    .replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g, ' ');
}

/**
 * Greedy word wrap to at most `columns` characters a line; a word longer than a line is broken
 * wherever it reaches the edge. Counts code points, so a character outside the BMP is one cell.
 *
 * @example
 * wrapText('a red fox in the snow', 10); // ['a red fox', 'in the', 'snow']
 */
export function wrapText(text: string, columns: number): string[] {
  const width = Math.max(1, Math.floor(columns));
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line: string[] = [];
    for (const word of paragraph.split(/\s+/).filter((w) => w !== '')) {
      let chars = Array.from(word);
      const needed = line.length === 0 ? chars.length : line.length + 1 + chars.length;
      if (needed <= width) {
        line = line.length === 0 ? chars : [...line, ' ', ...chars];
        continue;
      }
      if (line.length > 0) lines.push(line.join(''));
      while (chars.length > width) {
        lines.push(chars.slice(0, width).join(''));
        chars = chars.slice(width);
      }
      line = chars;
    }
    if (line.length > 0) lines.push(line.join(''));
  }
  return lines;
}

/** Pixel size of a block of `columns`×`rows` characters at a scale. */
export function textBlockSize(
  columns: number,
  rows: number,
  scale: number,
): { width: number; height: number } {
  return {
    width: columns > 0 ? ((columns - 1) * GLYPH_ADVANCE + GLYPH_WIDTH) * scale : 0,
    height: rows > 0 ? ((rows - 1) * LINE_ADVANCE + LINE_HEIGHT) * scale : 0,
  };
}

/**
 * Picks the largest scale at which the wrapped text fits the rectangle. At the smallest scale
 * the text is cut to the lines that fit, the last one ending in `...`.
 *
 * @example
 * fitText('a red fox', { width: 576, height: 260, maxScale: 6, minScale: 2 });
 * // { lines: ['a red fox'], scale: 6, truncated: false }
 */
export function fitText(text: string, options: FitOptions): TextLayout {
  const fontText = toFontText(text);
  const minScale = Math.max(1, Math.floor(options.minScale));
  for (let scale = Math.max(minScale, Math.floor(options.maxScale)); scale >= minScale; scale--) {
    const { columns, rows } = capacity(options, scale);
    const lines = wrapText(fontText, columns);
    if (lines.length <= rows) return { lines, scale, truncated: false };
  }
  const { columns, rows } = capacity(options, minScale);
  const lines = wrapText(fontText, columns).slice(0, Math.max(1, rows));
  const last = Array.from(lines.pop() ?? '');
  lines.push(`${last.slice(0, Math.max(0, columns - 3)).join('')}...`);
  return { lines, scale: minScale, truncated: true };
}

function capacity(options: FitOptions, scale: number): { columns: number; rows: number } {
  // n glyphs take (n-1) advances plus one glyph width; likewise for lines.
  return {
    columns: Math.max(1, Math.floor((options.width / scale - GLYPH_WIDTH) / GLYPH_ADVANCE) + 1),
    rows: Math.max(1, Math.floor((options.height / scale - LINE_HEIGHT) / LINE_ADVANCE) + 1),
  };
}
