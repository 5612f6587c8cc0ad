import { describe, expect, it } from 'vitest';
import { isUuidv7, uuidv7, uuidv7Generator, uuidv7Time } from '../../src/protocol/uuidv7.ts';

describe('uuidv7', () => {
  it('has the RFC 9562 layout: version 7, variant 10, the time in the first 48 bits', () => {
    const at = Date.UTC(2025, 0, 1, 12, 0, 0, 123);
    const id = uuidv7Generator(() => at)();
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(id.startsWith('019421bc-aa7b')).toBe(true);
    expect(uuidv7Time(id)).toBe(at);
    expect(isUuidv7(id)).toBe(true);
    expect(id).not.toContain('.');
  });

  it('strictly increases within one millisecond and when the clock steps back', () => {
    let now = 1_700_000_000_000;
    const next = uuidv7Generator(() => now);
    const ids: string[] = [];
    for (let i = 0; i < 5000; i++) ids.push(next()); // more than the 12-bit counter holds
    now -= 10_000;
    for (let i = 0; i < 10; i++) ids.push(next());
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(uuidv7Time(ids.at(-1)!)! - 1_700_000_000_000).toBeLessThan(10);
  });

  it('makes distinct identifiers on the system clock', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => uuidv7()));
    expect(ids.size).toBe(1000);
    expect(Math.abs(uuidv7Time(uuidv7())! - Date.now())).toBeLessThan(5_000);
  });

  it('tells UUIDv7 from other texts', () => {
    expect(isUuidv7('op-1')).toBe(false);
    expect(isUuidv7('0192f0e4-7c3a-4b1e-9d2f-5a6b7c8d9e0f')).toBe(false); // version 4
    expect(isUuidv7('0192F0E4-7C3A-7B1E-9D2F-5A6B7C8D9E0F')).toBe(false); // not canonical case
    expect(uuidv7Time('op-1')).toBeNull();
  });
});
