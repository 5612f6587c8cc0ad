import { describe, expect, it } from 'vitest';
import { endpointKeyOf } from '../../src/store/index.ts';

describe('endpointKeyOf', () => {
  // One receiver, one key: its circuit and its fairness slot must not split by spelling.
  it.each([
    ['https://Hooks.Example.com/cb?x=1', 'hooks.example.com:443'],
    ['https://hooks.example.com:443/other', 'hooks.example.com:443'],
    ['https://hooks.example.com./cb', 'hooks.example.com:443'],
    ['https://HOOKS.example.COM.:443/', 'hooks.example.com:443'],
    ['http://localhost.:8080/', 'localhost:8080'],
    ['http://a.example/', 'a.example:80'],
    ['http://a.example:8080/', 'a.example:8080'],
    ['http://127.0.0.1./', '127.0.0.1:80'],
    ['http://2130706433/', '127.0.0.1:80'],
    ['http://[::1]:9000/', '[::1]:9000'],
    ['http://[::FFFF:127.0.0.1]/', '[::ffff:7f00:1]:80'],
  ])('%s keys as %s', (url, key) => {
    expect(endpointKeyOf(url)).toBe(key);
  });

  it('keys a text that is not an absolute URL as itself, apart from every receiver', () => {
    expect(endpointKeyOf('/relative')).toBe('invalid:/relative');
    expect(endpointKeyOf('x'.repeat(300))).toBe(`invalid:${'x'.repeat(200)}`);
  });
});
