import { ReceiverError } from './receiver-error.ts';

/**
 * An origin as browsers write it in `Origin`: `scheme://host[:port]`, lower case, the default
 * port left out; null for anything else (`null`, a path, another scheme, several values).
 *
 * @example
 * originOf('HTTP://App.Example:80'); // 'http://app.example'
 * originOf('null'); // null
 */
export function originOf(text: string): string | null {
  if (!/^https?:\/\/[^/?#\s,]+\/?$/i.test(text)) return null;
  try {
    const url = new URL(text);
    return url.username || url.password ? null : url.origin;
  } catch {
    return null;
  }
}

/**
 * The origins of `--allow-origin` / `allowedOrigins`, each as `originOf` writes it: an entry that
 * is not an `http:` or `https:` origin (a path, `*`, `null`) throws a TypeError saying why.
 *
 * @example
 * allowedOriginsOf(['https://app.example:8443']).has('https://app.example:8443'); // true
 */
export function allowedOriginsOf(entries: readonly string[] = []): ReadonlySet<string> {
  const origins = new Set<string>();
  for (const entry of entries) {
    const origin = originOf(entry.trim());
    if (origin === null) {
      throw new TypeError(
        `"${entry}" is not an origin: write it as a browser sends it, scheme://host[:port] (http or https, no path)`,
      );
    }
    origins.add(origin);
  }
  return origins;
}

/**
 * Whether an `Origin` header names one of `allowed` (compared as `originOf` writes it).
 *
 * @example
 * originAllowed('https://app.example', allowedOriginsOf(['https://app.example'])); // true
 */
export function originAllowed(origin: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (origin === undefined || allowed.size === 0) return false;
  const read = originOf(origin);
  return read !== null && allowed.has(read);
}

/**
 * The refusal of a callback that a browser page posted: it carries an `Origin` (a sender never
 * does) not in `allowed`. A page on any site can post a form to a receiver it can reach, and
 * have a callback stored.
 *
 * @example
 * const refusal = crossOriginRefusal(request.header('origin'), allowedOriginsOf([]));
 * if (refusal) throw refusal;
 */
export function crossOriginRefusal(
  origin: string | undefined,
  allowed: ReadonlySet<string>,
): ReceiverError | null {
  if (origin === undefined || originAllowed(origin, allowed)) return null;
  return new ReceiverError(
    'cross_origin_request',
    `a browser page (Origin ${JSON.stringify(origin.slice(0, 200))}) posted this request: callbacks come ` +
      'from a sender, not a browser; allow the origin with --allow-origin (allowedOrigins) if it is meant to',
  );
}
