/**
 * An undici Agent whose every new connection goes through the SSRF guard: the host is resolved
 * once with the guarded resolution, every answer is checked, and the dialler is handed the
 * checked IP address itself, so nothing between the check and the dial can resolve the name
 * again. Keep-alive sockets of the pool were checked when they were dialled and stay connected
 * to that address; a new socket is a new check.
 */

import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { Agent, type buildConnector } from 'undici';
import { connectorWithDeadline } from '../connect-deadline.ts';
import { type ResolvedAddress, type Resolver, resolveAllowedAddresses } from './guarded-lookup.ts';
import { parseHostAddress } from './ip-address.ts';
import { type SsrfPolicy, validateSsrfPolicy } from './ssrf-policy.ts';

/** undici's connector: dials `options.hostname:options.port` and calls back with the socket. */
export type Connector = buildConnector.connector;

/** undici's options for the connector it builds (TLS options, `timeout`, keep-alive…). */
export type ConnectOptions = buildConnector.BuildOptions;

export interface GuardedConnectorOptions {
  /** Resolves host names; default `dns.promises.lookup` with `all: true`. */
  readonly resolver?: Resolver;
  /**
   * How a checked address is dialled: options for undici's own connector (default: its
   * defaults, a 10 s connect timeout), or a connector of your own. A connector is called with
   * `hostname` set to the checked IP address, `host` left as the URL's `host:port` and
   * `servername` set to the URL's host name (for TLS SNI and certificate checks).
   */
  readonly connect?: ConnectOptions | Connector;
  /** Milliseconds a resolution may take; default 10 s. */
  readonly resolveTimeout?: number;
}

export interface GuardedAgentOptions extends GuardedConnectorOptions {
  /**
   * Options of the Agent (pool size, keep-alive, body timeouts…). `connect` is the guard's,
   * and `factory` and `socketPath` are not accepted: either would let connections bypass it.
   */
  readonly agent?: Omit<Agent.Options, 'connect' | 'factory' | 'socketPath'>;
}

/**
 * Network errors after which the next address of the name is worth trying, as `net.connect`
 * itself would for a dual-stack name: the address did not answer, the next one may.
 */
const TRY_NEXT_ADDRESS = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'EADDRNOTAVAIL',
  'EAFNOSUPPORT',
  'UND_ERR_CONNECT_TIMEOUT',
]);

type ConnectTarget = buildConnector.Options;
type ConnectCallback = (error: Error | null, socket: Socket | TLSSocket | null) => void;

function dialInTurn(
  dial: Connector,
  target: ConnectTarget,
  hostname: string,
  addresses: readonly ResolvedAddress[],
  callback: ConnectCallback,
  index = 0,
): void {
  // A unix socket path would make the dialler ignore the checked address altogether.
  const { socketPath: _socketPath, ...rest } = target;
  const isName = parseHostAddress(hostname) === undefined;
  const servername = target.servername || (isName ? hostname : undefined);
  const checked: ConnectTarget = { ...rest, hostname: addresses[index]!.address };
  if (servername !== undefined) checked.servername = servername;
  const dialled = (error: Error | null, socket: Socket | TLSSocket | null): void => {
    if (error === null) {
      callback(null, socket);
      return;
    }
    const code = (error as { code?: unknown }).code;
    if (index + 1 < addresses.length && typeof code === 'string' && TRY_NEXT_ADDRESS.has(code)) {
      dialInTurn(dial, target, hostname, addresses, callback, index + 1);
      return;
    }
    callback(error, null);
  };
  try {
    dial(checked, dialled as buildConnector.Callback);
  } catch (error) {
    // Thrown inside a promise callback it would be lost and the request would hang.
    dialled(error instanceof Error ? error : new Error(String(error)), null);
  }
}

function dialerOf(connect: GuardedConnectorOptions['connect']): Connector {
  if (typeof connect === 'function') return connect;
  if (connect?.socketPath != null) throw new TypeError('a guarded connection cannot dial a unix socket path');
  return connectorWithDeadline({ ...connect });
}

/**
 * An undici connector that resolves and checks before it dials; a refused connection calls
 * back with the SsrfRefusedError (undici then fails the request with it) and never dials.
 *
 * @example
 * const client = new Client('https://hooks.example.com', { connect: createGuardedConnector({}) });
 */
function createGuardedConnector(policy: SsrfPolicy, options: GuardedConnectorOptions = {}): Connector {
  validateSsrfPolicy(policy);
  const dial = dialerOf(options.connect);
  const resolveOptions =
    options.resolveTimeout === undefined
      ? { resolver: options.resolver }
      : { resolver: options.resolver, timeout: options.resolveTimeout };
  return (target, callback) => {
    const done = callback as ConnectCallback;
    // undici hands IPv6 literals over unbracketed; stay safe if a caller does not.
    const hostname = target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname;
    resolveAllowedAddresses(policy, hostname, resolveOptions).then(
      (addresses) => dialInTurn(dial, target, hostname, addresses, done),
      (error: unknown) => done(error instanceof Error ? error : new Error(String(error)), null),
    );
  };
}

/**
 * An undici Agent for webhook deliveries: every connection it opens, pooled keep-alive ones
 * included, is checked on the address actually dialled. A refused request rejects with the
 * SsrfRefusedError (or an error whose `cause` chain holds it: see findSsrfRefusal).
 *
 * @example
 * const agent = createGuardedAgent({ allowPrivate: options.allowPrivateUrls });
 * await request(webhookUrl, { method: 'POST', body, headers, dispatcher: agent });
 * // rejects with: refused by the SSRF guard: 10.0.0.5 is private (10.0.0.0/8), resolved from evil.example; …
 */
export function createGuardedAgent(policy: SsrfPolicy, options: GuardedAgentOptions = {}): Agent {
  const agentOptions: Agent.Options = { ...options.agent };
  if ('socketPath' in agentOptions || 'factory' in agentOptions) {
    throw new TypeError('a guarded agent takes neither socketPath nor factory: both bypass the guard');
  }
  return new Agent({ ...agentOptions, connect: createGuardedConnector(policy, options) });
}
