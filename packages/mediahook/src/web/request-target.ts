import type { IncomingMessage } from 'node:http';

/**
 * The URL a request asks for, or null when its target cannot be read as one. An origin-form
 * target is a path even when it starts `//` (`new URL('//x/healthz', base)` would take `x` for a
 * host and answer `/healthz`); an absolute-form target (`GET http://host/path`) is read whole.
 *
 * @example
 * requestTargetOf(req)?.pathname; // '//v1/operations' for `GET //v1/operations`
 */
export function requestTargetOf(req: Pick<IncomingMessage, 'url'>): URL | null {
  const target = req.url ?? '/';
  try {
    return target.startsWith('/') ? new URL(`http://localhost${target}`) : new URL(target);
  } catch {
    return null;
  }
}
