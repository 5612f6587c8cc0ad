/**
 * Finds the route of the table a request is for: by its path (with `{name}` parameters) and
 * method (HEAD goes wherever GET does), and which methods its path takes otherwise.
 */
import type { Route } from './route.ts';

/** Paths under it belong to the API: an unknown one is still guarded (its 404 needs a key). */
const API_PREFIX = '/v1/';

interface Destination {
  /** The route for the request's method, if its path takes it. */
  route: Route | undefined;
  /** The path's parameters, still percent-encoded. */
  rawParams: Readonly<Record<string, string>>;
  /** The methods the path takes, for `Allow` (none: no such path). */
  allowed: readonly string[];
  /** Whether the request passes the API's guards (cross-site rule, preflight, key) first. */
  guarded: boolean;
}

interface CompiledRoute {
  route: Route;
  pattern: RegExp;
  names: string[];
}

function compile(route: Route): CompiledRoute {
  const names: string[] = [];
  const source = route.path
    .split(/(\{[^}/]+\})/)
    .map((piece) => {
      const name = /^\{([^}/]+)\}$/.exec(piece)?.[1];
      if (name === undefined) return piece.replace(/[.*+?^$()[\]\\|]/g, '\\$&');
      names.push(name);
      return '([^/]+)';
    })
    .join('');
  return { route, pattern: new RegExp(`^${source}$`), names };
}

/** The methods for `Allow`: GET brings HEAD, sorted as RFC 9110's examples list them. */
function allowOf(routes: readonly Route[]): string[] {
  return routes.flatMap((route) => (route.method === 'GET' ? ['GET', 'HEAD'] : [route.method])).sort();
}

/**
 * A router over `routes`.
 *
 * @example
 * const { route, rawParams } = routerOf(ROUTES)('GET', '/v1/operations/0193');
 */
export function routerOf(
  routes: readonly Route[],
): (method: string | undefined, path: string) => Destination {
  const compiled = routes.map(compile);
  return (method, path) => {
    const wanted = method === 'HEAD' ? 'GET' : method;
    const matching: { route: Route; params: Record<string, string> }[] = [];
    for (const { route, pattern, names } of compiled) {
      const match = pattern.exec(path);
      if (match)
        matching.push({ route, params: Object.fromEntries(names.map((name, i) => [name, match[i + 1]!])) });
    }
    const found = matching.find((candidate) => candidate.route.method === wanted);
    const route = found?.route;
    const rawParams = (found ?? matching[0])?.params ?? {};
    const guarded = route
      ? route.role !== 'open'
      : matching.length === 0
        ? path.startsWith(API_PREFIX)
        : matching.some((candidate) => candidate.route.role !== 'open');
    return { route, rawParams, allowed: allowOf(matching.map((candidate) => candidate.route)), guarded };
  };
}
