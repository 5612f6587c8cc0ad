/**
 * Test doubles of the SSRF guard's tests. The rule they exist for: no test opens a connection
 * to anything but loopback. Addresses outside loopback reach only the recording dialer, which
 * notes the target and, if asked to connect at all, connects to 127.0.0.1 whatever the target.
 */
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import type { Connector, ResolvedAddress, Resolver } from '../../../src/delivery/ssrf/index.ts';

/** The only address a test ever dials. */
export const LOOPBACK = '127.0.0.1';

function answer(address: string): ResolvedAddress {
  return { address, family: address.includes(':') ? 6 : 4 };
}

interface ScriptedResolver {
  readonly resolver: Resolver;
  /** The names asked, in order. */
  readonly asked: string[];
}

/**
 * A resolver answering from a table: a name maps to its addresses, or to a list of answers
 * given one per call (the last one repeating), to play DNS rebinding.
 */
export function scriptedResolver(table: Record<string, string[] | string[][]>): ScriptedResolver {
  const asked: string[] = [];
  const calls = new Map<string, number>();
  const resolver: Resolver = async (hostname) => {
    asked.push(hostname);
    const entry = table[hostname];
    if (entry === undefined)
      throw Object.assign(new Error(`no test answer for ${hostname}`), { code: 'ENOTFOUND' });
    const call = calls.get(hostname) ?? 0;
    calls.set(hostname, call + 1);
    const answers = Array.isArray(entry[0]) ? (entry as string[][]) : [entry as string[]];
    return (answers[Math.min(call, answers.length - 1)] ?? []).map(answer);
  };
  return { resolver, asked };
}

/** What the guard asked the dialler to connect to. */
interface DialRecord {
  readonly hostname: string;
  readonly host: string | undefined;
  readonly port: string;
  readonly protocol: string;
  readonly servername: string | undefined;
}

interface RecordingDialer {
  readonly connect: Connector;
  readonly dialled: DialRecord[];
}

/** The error of a recording dialer asked not to connect. */
export class NotDialledError extends Error {
  override readonly name = 'NotDialledError';
}

/**
 * A dialler that records each target. With `loopbackPort` it then connects to 127.0.0.1 on
 * that port, so a request "to" any address is answered by a local test server; without, it
 * fails with a NotDialledError. `failFirst` makes the first N dials fail with that code.
 */
export function recordingDialer(
  options: { loopbackPort?: number; failFirst?: { count: number; code: string } } = {},
): RecordingDialer {
  const dialled: DialRecord[] = [];
  const connector: Connector = (target, callback) => {
    const { hostname, host, port, protocol, servername } = target;
    dialled.push({ hostname, host, port, protocol, servername });
    const done = callback as (error: Error | null, socket: Socket | null) => void;
    if (options.failFirst !== undefined && dialled.length <= options.failFirst.count) {
      const error = Object.assign(new Error(`recording dialer: ${options.failFirst.code}`), {
        code: options.failFirst.code,
      });
      queueMicrotask(() => done(error, null));
      return;
    }
    if (options.loopbackPort === undefined) {
      queueMicrotask(() => done(new NotDialledError(`recording dialer: ${hostname} not dialled`), null));
      return;
    }
    const socket = connect({ host: LOOPBACK, port: options.loopbackPort });
    socket.once('connect', () => done(null, socket));
    socket.once('error', (error) => done(error, null));
  };
  return { connect: connector, dialled };
}

export interface LoopbackServer {
  readonly port: number;
  /** Remote ports of the connections accepted, one per TCP connection. */
  readonly connections: number[];
  /** Request paths, in order. */
  readonly requests: string[];
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 answering `ok <path>`; `closeEach` answers `Connection: close`. */
export async function startLoopbackServer(options: { closeEach?: boolean } = {}): Promise<LoopbackServer> {
  const connections: number[] = [];
  const requests: string[] = [];
  const server: Server = createServer((request, response) => {
    requests.push(request.url ?? '');
    request.resume();
    request.on('end', () => {
      if (options.closeEach) response.setHeader('connection', 'close');
      response.end(`ok ${request.url}`);
    });
  });
  server.on('connection', (socket) => connections.push(socket.remotePort ?? 0));
  await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    connections,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
