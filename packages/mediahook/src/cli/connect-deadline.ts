/**
 * Connect timeouts held to their limit. undici checks its own connect timeout on a clock
 * that ticks every half second, so a 300 ms limit gave up after about a second and a 10 s one
 * after up to 11 s; a timer of our own ends the wait when the limit is reached.
 */
import { buildConnector, errors } from 'undici';

/** undici's own default connect timeout, applied when `timeout` is not given. */
const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * undici's connector for `options`, whose `timeout` (milliseconds; default 10 s, 0: no limit) is
 * kept by a timer of its own. undici's coarser timeout stays armed underneath: it closes the socket
 * of a connect given up here within a second, and a connection that completes after the limit
 * is closed at once.
 *
 * @example
 * const agent = new Agent({ connect: connectorWithDeadline({ timeout: 10_000 }) });
 */
export function connectorWithDeadline(options: buildConnector.BuildOptions = {}): buildConnector.connector {
  const dial = buildConnector(options);
  const limit = options.timeout ?? DEFAULT_TIMEOUT_MS;
  if (!(limit > 0)) return dial;
  return (target, callback) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      const address = `${target.hostname}:${target.port}`;
      callback(
        new errors.ConnectTimeoutError(
          `Connect Timeout Error (attempted address: ${address}, timeout: ${limit}ms)`,
        ),
        null,
      );
    }, limit);
    dial(target, (error, socket) => {
      if (settled) {
        socket?.destroy();
        return;
      }
      settled = true;
      clearTimeout(timer);
      if (error) callback(error, null);
      else callback(null, socket!);
    });
  };
}
