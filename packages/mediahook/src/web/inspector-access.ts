import { isIPv4, isIPv6 } from 'node:net';

/**
 * Whether a client's address (a socket's `remoteAddress`) is this machine's loopback:
 * `127.0.0.0/8`, `::1`, or either written as IPv4-mapped IPv6 (`::ffff:127.0.0.1`).
 *
 * @example
 * isLoopbackAddress('::ffff:127.0.0.1'); // true
 * isLoopbackAddress('192.168.1.20'); // false
 */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const lower = address.toLowerCase();
  const v4 = lower.startsWith('::ffff:') ? lower.slice('::ffff:'.length) : lower;
  if (isIPv4(v4)) return v4.startsWith('127.');
  if (!isIPv6(lower)) return false;
  // Any spelling of ::1 (`0:0:0:0:0:0:0:1`), as the URL parser writes it shortest.
  return new URL(`http://[${lower}]/`).hostname === '[::1]';
}

/**
 * Whether `listen` shows its inspector, `/requests.json` and stored files to a client: to
 * loopback clients only, so binding to a public address for callbacks does not publish what
 * arrived, unless the inspector was opened to every client (`--inspector-open`).
 */
export function inspectorServes(remoteAddress: string | undefined, open: boolean): boolean {
  return open || isLoopbackAddress(remoteAddress);
}
