import { describe, expect, it } from 'vitest';
import { ResultBuffers } from '../../src/delivery/result-buffers.ts';

const KIB = 1024;

describe('ResultBuffers', () => {
  it('hands out buffers of exactly the size asked, and reuses one given back for the same receiver', () => {
    const buffers = new ResultBuffers();
    const first = buffers.take('a.example:443', 60 * KIB);
    expect(first.length).toBe(60 * KIB);
    buffers.give('a.example:443', first);
    expect(buffers.freeBytes).toBe(64 * KIB);
    // 61 KiB needs the same 64 KiB of room.
    const again = buffers.take('a.example:443', 61 * KIB);
    expect(again.buffer).toBe(first.buffer);
    expect(again.length).toBe(61 * KIB);
    expect(buffers.freeBytes).toBe(0);
  });

  it('never reuses a buffer for another receiver', () => {
    const buffers = new ResultBuffers();
    const a = buffers.take('a.example:443', 10 * KIB);
    buffers.give('a.example:443', a);
    const b = buffers.take('b.example:443', 10 * KIB);
    expect(b.buffer).not.toBe(a.buffer);
    expect(buffers.take('a.example:443', 10 * KIB).buffer).toBe(a.buffer);
  });

  it('keeps buffers of other sizes apart', () => {
    const buffers = new ResultBuffers();
    const small = buffers.take('a.example:443', 64 * KIB);
    buffers.give('a.example:443', small);
    const large = buffers.take('a.example:443', 64 * KIB + 1);
    expect(large.buffer).not.toBe(small.buffer);
    expect(large.buffer.byteLength).toBe(128 * KIB);
  });

  it('ignores what it did not lend, and a buffer given back twice', () => {
    const buffers = new ResultBuffers();
    buffers.give('a.example:443', Buffer.alloc(64 * KIB));
    expect(buffers.freeBytes).toBe(0);
    const lent = buffers.take('a.example:443', 1);
    buffers.give('a.example:443', lent);
    buffers.give('a.example:443', lent);
    expect(buffers.freeBytes).toBe(64 * KIB);
    const one = buffers.take('a.example:443', 1);
    const two = buffers.take('a.example:443', 1);
    expect(one.buffer).not.toBe(two.buffer);
  });

  it('keeps at most its bound, dropping the buffers of the receiver sent to least recently', () => {
    const buffers = new ResultBuffers({ maxFreeBytes: 128 * KIB });
    const a = buffers.take('a.example:443', 1);
    const b = buffers.take('b.example:443', 1);
    const c = buffers.take('c.example:443', 1);
    buffers.give('a.example:443', a);
    buffers.give('b.example:443', b);
    buffers.give('c.example:443', c);
    expect(buffers.freeBytes).toBe(128 * KIB);
    expect(buffers.take('a.example:443', 1).buffer).not.toBe(a.buffer);
    expect(buffers.take('b.example:443', 1).buffer).toBe(b.buffer);
    expect(buffers.take('c.example:443', 1).buffer).toBe(c.buffer);
    // A buffer larger than the bound is never kept.
    const huge = buffers.take('a.example:443', 200 * KIB);
    buffers.give('a.example:443', huge);
    expect(buffers.freeBytes).toBe(0);
  });
});
