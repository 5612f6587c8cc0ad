/**
 * The picture the built-in generators make: a two-colour gradient with soft diagonal waves and
 * a drifting glow, the prompt in large bitmap letters on a darkened panel, and a caption line.
 * A still image is one rendering; a video renders it at successive moments, so the waves and
 * the glow move (and loop) while the text stays put.
 */
import {
  DESCENT,
  GLYPH_ADVANCE,
  GLYPH_HEIGHT,
  GLYPH_WIDTH,
  glyphDrop,
  glyphRows,
  LINE_ADVANCE,
} from './bitmap-font.ts';
import { fitText, textBlockSize, toFontText } from './text-layout.ts';

interface SceneContent {
  /** The large text: the prompt. */
  text: string;
  /** The small line at the bottom. */
  caption: string;
  /** Decides the colours, so one operation always looks the same. */
  seed: string;
}

type Rgb = readonly [number, number, number];

// Mask values: what covers each pixel, painted over the moving background.
const PANEL = 1;
const SHADOW = 2;
const INK = 3;
const CAPTION = 4;

const INK_COLOUR: Rgb = [252, 250, 242];
const CAPTION_COLOUR: Rgb = [222, 226, 236];
const WAVE_AMPLITUDE = 12;
const GLOW_STRENGTH = 46;

/**
 * Renders the scene of one operation as packed RGB24 frames (`width*height*3` bytes, rows top
 * to bottom), ready for ffmpeg's `-f rawvideo -pix_fmt rgb24`.
 *
 * @example
 * const scene = new PromptScene({ text: 'a red fox', caption: 'mediahook', seed: idGen }, 640, 360);
 * const still = scene.render(null);
 * const middleOfClip = scene.render(0.5);
 */
export class PromptScene {
  readonly width: number;
  readonly height: number;
  /** The prompt's layout: font scale and whether it had to be cut short. */
  readonly textScale: number;
  readonly textTruncated: boolean;
  private readonly gradient: Uint8ClampedArray;
  private readonly mask: Uint8Array;
  private readonly glow: Float32Array;
  private readonly glowRadius: number;
  private readonly waveLength: number;

  constructor(content: SceneContent, width: number, height: number) {
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 64 || height < 64) {
      throw new RangeError(`a scene needs integer dimensions of at least 64×64, not ${width}×${height}`);
    }
    this.width = width;
    this.height = height;
    const hue = hashHue(content.seed);
    this.gradient = diagonalGradient(width, height, hsl(hue, 0.55, 0.36), hsl(hue + 70, 0.6, 0.2));
    this.waveLength = Math.max(24, Math.round(height / 7));
    this.glowRadius = Math.round(height * 0.45);
    this.glow = radialGlow(this.glowRadius);

    this.mask = new Uint8Array(width * height);
    const margin = Math.round(height * 0.09);
    const captionScale = Math.max(1, Math.floor(height / 180));
    const captionTop = height - margin - (GLYPH_HEIGHT + DESCENT) * captionScale;
    const layout = fitText(content.text, {
      width: width - 2 * margin,
      height: captionTop - 2 * margin,
      maxScale: Math.max(2, Math.floor(height / 60)),
      minScale: Math.max(1, Math.floor(height / 180)),
    });
    this.textScale = layout.scale;
    this.textTruncated = layout.truncated;
    this.markTextBlock(layout.lines, layout.scale, margin, captionTop - margin);
    this.markCaption(content.caption, captionScale, margin, captionTop);
  }

  /**
   * One frame. `at` is the moment within a looping clip, from 0 (start) to 1 (end, same as the
   * start); null renders the still picture. `progress` (0 to 1, default `at`) is drawn as a
   * bar along the bottom edge of a clip's frames; a still picture has none.
   */
  render(at: number | null, progress: number | null = at): Buffer {
    const { width, height } = this;
    const phase = at === null ? 0 : at;
    const out = new Uint8ClampedArray(width * height * 3);
    out.set(this.gradient);
    this.addWaves(out, phase);
    this.addGlow(out, phase);
    this.paintMask(out);
    if (progress !== null) this.paintProgress(out, progress);
    return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  }

  /** Marks the panel, shadow and ink of the prompt, centred in the area above the caption. */
  private markTextBlock(lines: string[], scale: number, margin: number, areaBottom: number): void {
    if (lines.length === 0) return;
    const widest = Math.max(...lines.map((line) => Array.from(line).length));
    const block = textBlockSize(widest, lines.length, scale);
    const top = Math.round(margin + (areaBottom - margin - block.height) / 2);
    const pad = 3 * scale;
    const left = Math.round((this.width - block.width) / 2);
    this.fillMask(left - pad, top - pad, block.width + 2 * pad, block.height + 2 * pad, PANEL);
    const shadowOffset = Math.max(1, Math.round(scale / 2));
    for (const [value, offset] of [
      [SHADOW, shadowOffset],
      [INK, 0],
    ] as const) {
      lines.forEach((line, row) => {
        const lineWidth = textBlockSize(Array.from(line).length, 1, scale).width;
        const x = Math.round((this.width - lineWidth) / 2) + offset;
        this.markLine(line, x, top + row * LINE_ADVANCE * scale + offset, scale, value);
      });
    }
  }

  private markCaption(caption: string, scale: number, margin: number, top: number): void {
    const columns = Math.floor((this.width - 2 * margin) / (GLYPH_ADVANCE * scale));
    const chars = Array.from(toFontText(caption).replace(/\s+/g, ' ')).slice(0, columns);
    this.markLine(chars.join(''), margin, top, scale, CAPTION);
  }

  private markLine(line: string, left: number, top: number, scale: number, value: number): void {
    let x = left;
    for (const char of line) {
      const rows = glyphRows(char);
      const glyphTop = top + glyphDrop(char) * scale;
      for (let row = 0; row < GLYPH_HEIGHT; row++) {
        const bits = rows[row] ?? 0;
        for (let column = 0; column < GLYPH_WIDTH; column++) {
          if ((bits >> (GLYPH_WIDTH - 1 - column)) & 1) {
            this.fillMask(x + column * scale, glyphTop + row * scale, scale, scale, value);
          }
        }
      }
      x += GLYPH_ADVANCE * scale;
    }
  }

  private fillMask(left: number, top: number, w: number, h: number, value: number): void {
    const x0 = Math.max(0, left);
    const x1 = Math.min(this.width, left + w);
    for (let y = Math.max(0, top); y < Math.min(this.height, top + h); y++) {
      if (x1 > x0) this.mask.fill(value, y * this.width + x0, y * this.width + x1);
    }
  }

  /** Diagonal bands of light and shade that travel two wavelengths over a clip. */
  private addWaves(out: Uint8ClampedArray, phase: number): void {
    const { width, height, waveLength } = this;
    const shift = phase * 2 * waveLength;
    const offsets = new Int8Array(width + height);
    for (let d = 0; d < offsets.length; d++) {
      offsets[d] = Math.round(WAVE_AMPLITUDE * Math.sin((2 * Math.PI * (d - shift)) / waveLength));
    }
    for (let y = 0, i = 0; y < height; y++) {
      for (let x = 0; x < width; x++, i += 3) {
        const delta = offsets[x + y]!;
        out[i] = out[i]! + delta;
        out[i + 1] = out[i + 1]! + delta;
        out[i + 2] = out[i + 2]! + delta;
      }
    }
  }

  /** A soft light whose centre follows a closed loop, so the clip's last frame meets its first. */
  private addGlow(out: Uint8ClampedArray, phase: number): void {
    const { width, height, glowRadius: r } = this;
    const angle = 2 * Math.PI * phase;
    const cx = Math.round(width * (0.3 + 0.3 * Math.sin(angle + Math.PI / 4)));
    const cy = Math.round(height * (0.35 + 0.2 * Math.sin(2 * angle)));
    const size = 2 * r + 1;
    for (let gy = Math.max(0, r - cy); gy < size && cy - r + gy < height; gy++) {
      const y = cy - r + gy;
      for (let gx = Math.max(0, r - cx); gx < size && cx - r + gx < width; gx++) {
        const light = this.glow[gy * size + gx]!;
        if (light === 0) continue;
        const i = (y * width + cx - r + gx) * 3;
        out[i] = out[i]! + light;
        out[i + 1] = out[i + 1]! + light;
        out[i + 2] = out[i + 2]! + light * 0.8;
      }
    }
  }

  private paintMask(out: Uint8ClampedArray): void {
    const mask = this.mask;
    for (let p = 0; p < mask.length; p++) {
      const value = mask[p]!;
      if (value === 0) continue;
      const i = p * 3;
      if (value === PANEL) darken(out, i, 0.62);
      else if (value === SHADOW) darken(out, i, 0.25);
      else setColour(out, i, value === INK ? INK_COLOUR : CAPTION_COLOUR);
    }
  }

  private paintProgress(out: Uint8ClampedArray, at: number): void {
    const barHeight = Math.max(2, Math.round(this.height / 90));
    const filled = Math.round(this.width * Math.min(1, Math.max(0, at)));
    for (let y = this.height - barHeight; y < this.height; y++) {
      for (let x = 0; x < filled; x++) setColour(out, (y * this.width + x) * 3, CAPTION_COLOUR);
    }
  }
}

function darken(out: Uint8ClampedArray, i: number, factor: number): void {
  out[i] = out[i]! * factor;
  out[i + 1] = out[i + 1]! * factor;
  out[i + 2] = out[i + 2]! * factor;
}

function setColour(out: Uint8ClampedArray, i: number, colour: Rgb): void {
  out[i] = colour[0];
  out[i + 1] = colour[1];
  out[i + 2] = colour[2];
}

function diagonalGradient(width: number, height: number, from: Rgb, to: Rgb): Uint8ClampedArray {
  const out = new Uint8ClampedArray(width * height * 3);
  const span = width + height - 2 || 1;
  for (let y = 0, i = 0; y < height; y++) {
    for (let x = 0; x < width; x++, i += 3) {
      const t = (x + y) / span;
      out[i] = from[0] + (to[0] - from[0]) * t;
      out[i + 1] = from[1] + (to[1] - from[1]) * t;
      out[i + 2] = from[2] + (to[2] - from[2]) * t;
    }
  }
  return out;
}

/** Brightness to add around a centre, fading smoothly to zero at `radius`. */
function radialGlow(radius: number): Float32Array {
  const size = 2 * radius + 1;
  const glow = new Float32Array(size * size);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const d2 = ((x - radius) ** 2 + (y - radius) ** 2) / (radius * radius);
      glow[y * size + x] = d2 >= 1 ? 0 : GLOW_STRENGTH * (1 - d2) ** 2;
    }
  }
  return glow;
}

/** A hue in degrees from a text (FNV-1a), so the same seed always gives the same colours. */
function hashHue(seed: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(seed, 'utf8')) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0;
  return hash % 360;
}

function hsl(hueDegrees: number, saturation: number, lightness: number): Rgb {
  const h = (((hueDegrees % 360) + 360) % 360) / 60;
  const chroma = (1 - Math.abs(2 * lightness - 1)) * saturation;
  const second = chroma * (1 - Math.abs((h % 2) - 1));
  // The six 60° sectors of the colour wheel, each with its own order of the components.
  const sectors: Array<[number, number, number]> = [
    [chroma, second, 0],
    [second, chroma, 0],
    [0, chroma, second],
    [0, second, chroma],
    [second, 0, chroma],
    [chroma, 0, second],
  ];
  const [r, g, b] = sectors[Math.min(5, Math.floor(h))]!;
  const m = lightness - chroma / 2;
  return [Math.round((r + m) * 255), Math.round((g + m) * 255), Math.round((b + m) * 255)];
}
