/** Origins as browsers write them, the `--allow-origin` list, and the refusal of a page's callback. */
import { describe, expect, it } from 'vitest';
import { allowedOriginsOf, crossOriginRefusal, originAllowed, originOf } from '../../src/receiver/index.ts';

describe('originOf', () => {
  it.each([
    ['http://127.0.0.1:9000', 'http://127.0.0.1:9000'],
    ['HTTPS://App.Example:443', 'https://app.example'],
    ['http://app.example:80/', 'http://app.example'],
    ['http://[::1]:3000', 'http://[::1]:3000'],
  ])('reads %j as %j', (text, origin) => {
    expect(originOf(text)).toBe(origin);
  });

  it.each([
    'null',
    '*',
    '',
    'file://',
    'ftp://app.example',
    'https://app.example/path',
    'https://app.example?q',
    'https://user@app.example',
    'https://a.example, https://b.example',
  ])('reads %j as no origin', (text) => {
    expect(originOf(text)).toBeNull();
  });
});

describe('allowedOriginsOf and originAllowed', () => {
  it('compares origins as browsers write them', () => {
    const allowed = allowedOriginsOf(['https://App.Example:443', 'http://localhost:3000']);
    expect(originAllowed('https://app.example', allowed)).toBe(true);
    expect(originAllowed('http://localhost:3000', allowed)).toBe(true);
    expect(originAllowed('http://app.example', allowed)).toBe(false);
    expect(originAllowed('http://localhost:3001', allowed)).toBe(false);
    expect(originAllowed('null', allowed)).toBe(false);
    expect(originAllowed(undefined, allowed)).toBe(false);
  });

  it('refuses an entry that is not an origin', () => {
    for (const entry of ['*', 'null', 'app.example', 'https://app.example/x']) {
      expect(() => allowedOriginsOf([entry]), entry).toThrow(/not an origin/);
    }
  });
});

describe('crossOriginRefusal', () => {
  it('refuses a request with any Origin not allowed, and none without one', () => {
    const allowed = allowedOriginsOf(['https://app.example']);
    expect(crossOriginRefusal(undefined, allowed)).toBeNull();
    expect(crossOriginRefusal('https://app.example', allowed)).toBeNull();
    for (const origin of ['https://evil.example', 'null', 'http://127.0.0.1:9000']) {
      expect(crossOriginRefusal(origin, allowed)?.code, origin).toBe('cross_origin_request');
    }
  });
});
