import { readFileSync } from 'node:fs';

let cached: string | undefined;

/**
 * The package version, read once from package.json (which every install of the package has),
 * for `--version` and the `User-Agent: mediahook/<version>` header.
 *
 * @example
 * `mediahook/${version()}`; // 'mediahook/0.1.0'
 */
export function version(): string {
  if (cached === undefined) {
    const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
    cached = String((JSON.parse(text) as { version?: unknown }).version ?? '0.0.0');
  }
  return cached;
}

/**
 * The User-Agent of every request mediahook makes (protocol.md's decisions, "versioning").
 *
 * @example
 * userAgent(); // 'mediahook/0.1.0'
 */
export function userAgent(): string {
  return `mediahook/${version()}`;
}
