/** The embedded font and the layout of a prompt: what the pictures' text is made of. */
import { describe, expect, it } from 'vitest';
import { GLYPH_HEIGHT, glyphDrop, glyphRows, hasGlyph } from '../../../src/service/generators/bitmap-font.ts';
import { fitText, toFontText, wrapText } from '../../../src/service/generators/text-layout.ts';

const PRINTABLE = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i));

describe('bitmap font', () => {
  it('has a distinct 5×7 glyph for every printable ASCII character', () => {
    const seen = new Set<string>();
    for (const char of PRINTABLE) {
      expect(hasGlyph(char)).toBe(true);
      const rows = glyphRows(char);
      expect(rows.length).toBe(GLYPH_HEIGHT);
      expect(rows.every((row) => row < 32)).toBe(true);
      seen.add(rows.join(','));
    }
    expect(seen.size).toBe(PRINTABLE.length);
  });

  it('draws the placeholder for everything else, and lowers the descending letters', () => {
    expect(hasGlyph('é')).toBe(false);
    expect(glyphRows('日')).toEqual(glyphRows('🦊'));
    expect(glyphRows('日')).not.toEqual(glyphRows('?'));
    expect(glyphRows('\u0000')).toEqual(glyphRows('日'));
    expect(['g', 'p', 'q', 'y'].map(glyphDrop)).toEqual([2, 2, 2, 2]);
    expect(glyphDrop('a')).toBe(0);
  });
});

describe('toFontText', () => {
  it('drops accents, replaces typography by ASCII, turns controls into spaces and keeps line breaks', () => {
    expect(toFontText('“Crème brûlée” – 2×… ½')).toBe('"Creme brulee" - 2x... 1/2');
    expect(toFontText('a\tb\r\nc\u0007d')).toBe('a b\nc d');
    expect(toFontText('日本 🦊')).toBe('日本 🦊');
  });
});

describe('wrapText', () => {
  it('wraps on words, breaks words longer than a line and keeps paragraphs', () => {
    expect(wrapText('a red fox in the snow', 10)).toEqual(['a red fox', 'in the', 'snow']);
    expect(wrapText('supercalifragilistic ok', 8)).toEqual(['supercal', 'ifragili', 'stic ok']);
    expect(wrapText('one\ntwo  three', 20)).toEqual(['one', 'two three']);
    expect(wrapText('   ', 5)).toEqual([]);
  });

  it('counts characters outside the BMP as one cell', () => {
    expect(wrapText('🦊🦊🦊 🦊', 3)).toEqual(['🦊🦊🦊', '🦊']);
  });
});

describe('fitText', () => {
  const area = { width: 576, height: 260, maxScale: 6, minScale: 2 };

  it('uses the largest scale at which the text fits', () => {
    expect(fitText('a red fox', area)).toEqual({ lines: ['a red fox'], scale: 6, truncated: false });
    const medium = fitText('a red fox jumping over a frozen lake at dawn while the sun rises', area);
    expect(medium.truncated).toBe(false);
    expect(medium.scale).toBeLessThan(6);
    expect(medium.scale).toBeGreaterThanOrEqual(2);
  });

  it('cuts text that does not fit even at the smallest scale, ending in ...', () => {
    const layout = fitText('word '.repeat(1000), area);
    expect(layout.truncated).toBe(true);
    expect(layout.scale).toBe(2);
    expect(layout.lines.at(-1)?.endsWith('...')).toBe(true);
    const columns = Math.max(...layout.lines.map((line) => line.length));
    expect(columns).toBeLessThanOrEqual(Math.floor((576 / 2 - 5) / 6) + 1);
  });
});
