import { emitWarning } from 'node:process';
import { allowedHostsOf, hostAllowed, hostHint, hostNotAllowedMessage, oncePerHost } from '../host-check.ts';
import { ReceiverError } from '../receiver-error.ts';

/** The opt-in Host check of an adapter, against DNS rebinding: the same options for every adapter. */
export interface HostGuardOptions {
  /**
   * Answer only requests whose `Host` (without its port) is an IP literal, `localhost` or a name
   * under it, or one of these names (`.example.com`: that name and those under it; `*`: any).
   * Others are refused `host_not_allowed` (500), before the body is read. Off when not given.
   */
  allowedHosts?: readonly string[] | undefined;
  /**
   * Told of each refused request's Host. By default a process warning naming `allowedHosts`, once
   * per distinct host (`oncePerHost`), so a flood of made-up names does not flood the log.
   */
  onHostRefused?: ((host: string) => void) | undefined;
}

/** Turns a request's Host into its refusal, or null when it passes. */
type HostGuard = (host: string | undefined) => ReceiverError | null;

/**
 * The Host check `options` ask for, or null when they ask for none; a bad `allowedHosts` entry
 * throws a TypeError at start-up.
 *
 * @example
 * const guard = hostGuardOf({ allowedHosts: ['hooks.example.com'] });
 * const refusal = guard?.(req.headers.host);
 */
export function hostGuardOf(options: HostGuardOptions): HostGuard | null {
  if (options.allowedHosts === undefined) return null;
  const allowed = allowedHostsOf(options.allowedHosts);
  const told = options.onHostRefused ?? warnOncePerHost();
  return (host) => {
    if (hostAllowed(host, allowed)) return null;
    told(host!);
    return hostRefusal(host!);
  };
}

/** The default `onHostRefused`: a process warning naming `allowedHosts`, once per distinct host. */
export function warnOncePerHost(): (host: string) => void {
  return oncePerHost((host, last) => emitWarning(hostHint(host, 'allowedHosts', last), 'HostNotAllowed'));
}

/** The refusal of a request for a Host this server does not answer to. */
export function hostRefusal(host: string): ReceiverError {
  return new ReceiverError('host_not_allowed', hostNotAllowedMessage(host));
}
