import { isIP, isIPv4, isIPv6 } from 'node:net';

/**
 * What a `Host` header names, as a server compares it: without its port, in lower case and
 * without one trailing dot (`LocalHost.` is `localhost` to DNS and to every browser).
 * `ip` is an IP literal (four decimal octets, or IPv6 in brackets, a zone allowed), which no
 * DNS answer can rebind; `loopback` is `localhost` or a name under it, which browsers resolve
 * to loopback themselves (RFC 6761); `invalid` is anything no browser would send.
 */
interface HostName {
  kind: 'ip' | 'loopback' | 'name' | 'invalid';
  /** The name without port, lower case, trailing dot removed; '' when invalid. */
  name: string;
}

const LABELS = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;
const PORT = /^\d{0,5}$/;
const INVALID: HostName = { kind: 'invalid', name: '' };

/** A host name as DNS compares it: lower case, one trailing dot dropped; null when not a name. */
function dnsName(text: string): string | null {
  const lower = text.toLowerCase();
  const name = lower.endsWith('.') ? lower.slice(0, -1) : lower;
  return name.length <= 253 && LABELS.test(name) ? name : null;
}

/**
 * Reads a `Host` header value (`host`, `host:port`, `[v6]`, `[v6]:port`).
 *
 * @example
 * classifyHost('LocalHost.:9000'); // { kind: 'loopback', name: 'localhost' }
 * classifyHost('[::1]:8080'); // { kind: 'ip', name: '::1' }
 * classifyHost('rebind.test'); // { kind: 'name', name: 'rebind.test' }
 */
export function classifyHost(value: string): HostName {
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    const rest = value.slice(end + 1);
    if (end < 0 || !(rest === '' || (rest.startsWith(':') && PORT.test(rest.slice(1))))) return INVALID;
    const literal = value.slice(1, end).toLowerCase();
    // A zone (`fe80::1%25eth0`, RFC 6874) names an interface, not a site: still a literal.
    const address = literal.replace(/%(?:25)?[\w.~-]+$/, '');
    return isIPv6(address) ? { kind: 'ip', name: literal } : INVALID;
  }
  const colon = value.indexOf(':');
  if (colon >= 0 && !PORT.test(value.slice(colon + 1))) return INVALID;
  const name = dnsName(colon >= 0 ? value.slice(0, colon) : value);
  if (name === null) return INVALID;
  if (isIPv4(name)) return { kind: 'ip', name };
  if (name === 'localhost' || name.endsWith('.localhost')) return { kind: 'loopback', name };
  return { kind: 'name', name };
}

/** The names a server answers to besides IP literals and loopback names; see `allowedHostsOf`. */
interface AllowedHosts {
  /** `*` was given: every Host is answered. */
  readonly any: boolean;
  readonly names: ReadonlySet<string>;
  /** Entries `.example.com`, kept as `.example.com`: the name and every name under it. */
  readonly domains: readonly string[];
}

/**
 * The allow-list of `--allowed-host` / `allowedHosts`, each entry checked: a host name (its
 * port left out), `.example.com` for that name and every name under it, or `*` for any Host (the
 * check off). A bad entry throws a TypeError saying why.
 *
 * @example
 * const allowed = allowedHostsOf(['hooks.example.com', '.tunnel.example']);
 * hostAllowed('abc.tunnel.example:443', allowed); // true
 */
export function allowedHostsOf(entries: readonly string[] = []): AllowedHosts {
  const names = new Set<string>();
  const domains: string[] = [];
  let any = false;
  for (const entry of entries) {
    const text = entry.trim();
    if (text === '*') {
      any = true;
      continue;
    }
    if (text.startsWith('*.')) {
      throw new TypeError(`"${entry}": write ".${text.slice(2)}" for a name and the names under it`);
    }
    const domain = text.startsWith('.');
    const bare = domain ? text.slice(1) : text;
    // An IP literal is answered anyway: such an entry changes nothing.
    if (!domain && (isIP(bare) || isIP(bare.replace(/^\[(.*)\]$/, '$1')))) continue;
    const read = classifyHost(bare);
    if (read.kind === 'invalid' || read.kind === 'ip') {
      throw new TypeError(`"${entry}" is not a host name (a name, .example.com, or *)`);
    }
    if (bare.includes(':')) {
      throw new TypeError(`"${entry}": give the name without a port; a Host is compared without its port`);
    }
    if (domain) domains.push(`.${read.name}`);
    else names.add(read.name);
  }
  return { any, names, domains };
}

/**
 * Whether a server answers a request with this `Host` header: an IP literal, a loopback name,
 * an allowed name, or any with `*`. A request without a Host names no site, and a browser always
 * sends one, so it cannot carry a DNS-rebinding attack: it is answered.
 *
 * @example
 * hostAllowed('127.0.0.1:9000', allowedHostsOf()); // true
 * hostAllowed('rebind.test:9000', allowedHostsOf()); // false
 */
export function hostAllowed(value: string | undefined, allowed: AllowedHosts): boolean {
  if (value === undefined || allowed.any) return true;
  const host = classifyHost(value);
  if (host.kind === 'ip' || host.kind === 'loopback') return true;
  if (host.kind === 'invalid') return false;
  if (allowed.names.has(host.name)) return true;
  return allowed.domains.some((domain) => host.name === domain.slice(1) || host.name.endsWith(domain));
}

/** How many distinct refused hosts get a hint: past them, a flood of made-up names logs nothing. */
const HINTED_HOSTS = 32;

/**
 * Wraps `tell` so that it runs once per distinct host name (ports aside), for the first 32 of
 * them; the last of those calls has `last` set, to say that further ones go untold. Requests
 * keep being refused; only their hints stop.
 *
 * @example
 * const hint = oncePerHost((host) => console.error(`refused Host ${host}`));
 * hint('a.test'); hint('a.test'); // told once
 */
export function oncePerHost(
  tell: (host: string, last: boolean) => void,
  max = HINTED_HOSTS,
): (host: string) => void {
  const told = new Set<string>();
  return (host) => {
    // By name: the same name on another port is the same host to allow.
    const key = classifyHost(host).name || host;
    if (told.size >= max || told.has(key)) return;
    told.add(key);
    tell(host, told.size === max);
  };
}

/**
 * The hint a server logs for a refused Host, naming how to allow it (`--allowed-host` on the
 * command line, `allowedHosts` in code).
 *
 * @example
 * hostHint('abc.ngrok.app', '--allowed-host', false);
 */
export function hostHint(host: string, how: string, last: boolean): string {
  const read = classifyHost(host);
  const shown = JSON.stringify(host.slice(0, 200));
  const advice =
    read.kind === 'name'
      ? `; if this server is reached by that name (a tunnel, a proxy), allow it with ${how} ${read.name}`
      : '';
  const more = last ? ' (further hosts refused are not logged)' : '';
  return (
    `refused a request for Host ${shown}: only IP addresses, localhost and allowed names are ` +
    `answered, against DNS rebinding${advice}${more}`
  );
}

/**
 * What a refused request is told. It names both ways of allowing a host, as the same words come
 * from `listen`, `serve` and a user's own server.
 *
 * @example
 * hostNotAllowedMessage('rebind.test:9000');
 */
export function hostNotAllowedMessage(host: string): string {
  return (
    `this server does not answer to Host ${JSON.stringify(host.slice(0, 200))}: only to IP addresses, ` +
    'localhost and the names it is given (--allowed-host, allowedHosts), against DNS rebinding'
  );
}
