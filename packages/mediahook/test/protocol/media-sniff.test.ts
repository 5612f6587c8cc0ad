/** The media type of a result file is decided by its first bytes, never by what the sender declares. */
import { describe, expect, it } from 'vitest';
import { SNIFF_BYTES, sniffMediaType } from '../../src/protocol/index.ts';

const bytes = (...values: (number | string)[]) =>
  Buffer.concat(values.map((v) => (typeof v === 'number' ? Buffer.from([v]) : Buffer.from(v, 'latin1'))));

describe('sniffMediaType', () => {
  it.each([
    {
      what: 'JPEG with a JFIF APP0',
      head: bytes(0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 'JFIF'),
      type: 'image/jpeg',
    },
    {
      what: 'JPEG with an Exif APP1',
      head: bytes(0xff, 0xd8, 0xff, 0xe1, 0x12, 0x34, 'Exif'),
      type: 'image/jpeg',
    },
    {
      what: 'JPEG starting with a quantisation table',
      head: bytes(0xff, 0xd8, 0xff, 0xdb),
      type: 'image/jpeg',
    },
    { what: 'exactly the three JPEG bytes', head: bytes(0xff, 0xd8, 0xff), type: 'image/jpeg' },
    { what: 'MP4, isom brand', head: bytes(0, 0, 0, 0x18, 'ftypisom', 0, 0, 2, 0), type: 'video/mp4' },
    { what: 'MP4, mp42 brand, large ftyp box', head: bytes(0, 0, 1, 0, 'ftypmp42'), type: 'video/mp4' },
    { what: 'exactly eight bytes ending in ftyp', head: bytes(0, 0, 0, 0x20, 'ftyp'), type: 'video/mp4' },
    { what: 'two JPEG bytes only', head: bytes(0xff, 0xd8), type: null },
    { what: 'JPEG SOI followed by something else', head: bytes(0xff, 0xd8, 0xfe, 0xe0), type: null },
    { what: 'ftyp at offset 0', head: bytes('ftypisom', 0, 0, 0, 0), type: null },
    { what: 'ftyp cut after seven bytes', head: bytes(0, 0, 0, 0x18, 'fty'), type: null },
    { what: 'FTYP in upper case', head: bytes(0, 0, 0, 0x18, 'FTYPisom'), type: null },
    { what: 'a moov box first', head: bytes(0, 0, 0, 0x18, 'moov'), type: null },
    { what: 'PNG', head: bytes(0x89, 'PNG\r\n', 0x1a, '\n'), type: null },
    { what: 'GIF', head: bytes('GIF89a', 1, 0), type: null },
    { what: 'WebP', head: bytes('RIFF', 0, 0, 0, 0, 'WEBPVP8 '), type: null },
    { what: 'text', head: bytes('success'), type: null },
    { what: 'nothing', head: bytes(), type: null },
  ])('$what → $type', ({ head, type }) => {
    expect(sniffMediaType(head)).toBe(type);
    // The decoder decides after SNIFF_BYTES bytes: that prefix must be enough.
    expect(sniffMediaType(head.subarray(0, SNIFF_BYTES))).toBe(type);
    expect(sniffMediaType(new Uint8Array(head))).toBe(type);
  });
});
