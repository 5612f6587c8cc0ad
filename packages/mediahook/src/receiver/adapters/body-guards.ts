import { ReceiverError } from '../receiver-error.ts';

/** How long a request body may keep a receiver waiting: the same options for every adapter. */
export interface BodyGuardOptions {
  /** Fail a request whose body sends nothing for this long (ms). Default 30 s; 0 turns it off. */
  idleTimeoutMs?: number | undefined;
  /**
   * Fail a request whose body arrives slower than this over a whole `rateWindowMs` (a sender
   * that trickles a byte now and then escapes the idle timeout). Default 1024 bytes/s; 0 turns
   * it off.
   */
  minBytesPerSecond?: number | undefined;
  /** The window the minimum rate is measured over (ms). Default 30 s. */
  rateWindowMs?: number | undefined;
  /**
   * Fail a request whose whole body has not arrived this long after the receiver started on it
   * (ms), however steadily it comes. Default 0: off (a Node server's own `requestTimeout` still
   * applies, answered by Node with a 408).
   */
  requestTimeoutMs?: number | undefined;
}

/** The guards in force, defaults filled in; 0 means off. Resolved once per handler. */
export interface BodyGuards {
  idleMs: number;
  minBytesPerSecond: number;
  rateWindowMs: number;
  /** The bytes a whole rate window must bring. */
  leastPerWindow: number;
  requestMs: number;
}

export function bodyGuardsOf(options: BodyGuardOptions): BodyGuards {
  const minBytesPerSecond = options.minBytesPerSecond ?? 1024;
  const rateWindowMs = options.rateWindowMs ?? 30_000;
  const rateOn = minBytesPerSecond > 0 && rateWindowMs > 0;
  return {
    idleMs: options.idleTimeoutMs ?? 30_000,
    minBytesPerSecond: rateOn ? minBytesPerSecond : 0,
    rateWindowMs: rateOn ? rateWindowMs : 0,
    leastPerWindow: rateOn ? (minBytesPerSecond * rateWindowMs) / 1000 : 0,
    requestMs: options.requestTimeoutMs ?? 0,
  };
}

/** Whether any guard is on: with none, a body is read as it is. */
export function guardsOn(guards: BodyGuards): boolean {
  return guards.idleMs > 0 || guards.rateWindowMs > 0 || guards.requestMs > 0;
}

export function requestTimeoutError(requestMs: number): ReceiverError {
  return new ReceiverError('timeout', `the request body did not arrive whole within ${requestMs} ms`);
}

export function idleTimeoutError(idleMs: number): ReceiverError {
  return new ReceiverError('timeout', `the request body sent nothing for ${idleMs} ms`);
}

export function slowBodyError(guards: BodyGuards): ReceiverError {
  return new ReceiverError(
    'timeout',
    `the request body arrived at under ${guards.minBytesPerSecond} bytes/s for ${guards.rateWindowMs / 1000} s`,
  );
}

/**
 * Wraps a body so that a guard watching it from beside it can fail its reads without
 * destroying the connection under it, which then stays open for the receiver's `500 timeout`
 * answer (destroying a Node request closes its socket at once: the sender gets no answer).
 * `watch` is handed `fail`, which fails the pending read and every one after it; the first
 * error stays.
 *
 * @example
 * const body = failableBody(req, (fail) => setTimeout(() => fail(idleTimeoutError(30_000)), 30_000));
 * for await (const chunk of body) decoder.write(chunk);
 */
export function failableBody<T>(
  source: AsyncIterable<T>,
  watch: (fail: (error: Error) => void) => void,
): AsyncIterable<T> {
  let failure: Error | null = null;
  let rejectPending: ((error: Error) => void) | null = null;
  const body: AsyncIterable<T> = {
    [Symbol.asyncIterator]() {
      const inner = source[Symbol.asyncIterator]();
      return {
        next() {
          if (failure) return Promise.reject(failure);
          return new Promise<IteratorResult<T>>((resolve, reject) => {
            rejectPending = reject;
            // Settles the outer promise once: a read that ends after fail() is dropped quietly.
            inner.next().then(resolve, reject);
          });
        },
        async return(value?: unknown) {
          await inner.return?.(value);
          return { done: true as const, value: undefined };
        },
      };
    },
  };
  watch((error) => {
    if (failure) return;
    failure = error;
    rejectPending?.(error);
  });
  return body;
}

const TIMER = Symbol('timer');

/**
 * A Web body stream read with the idle timeout and the minimum rate: where no Node socket is
 * underneath (Next.js, Deno, Bun, workers). Only the time spent waiting for the sender counts,
 * not the time the receiver spends storing what it read, so a slow disk is never blamed on the
 * sender; the request timeout, like Node's, counts from the start of the body. A tripped guard
 * cancels the stream and fails the read with `timeout`.
 */
export async function* guardedWebBody(
  body: ReadableStream<Uint8Array>,
  guards: BodyGuards,
): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  const deadline = guards.requestMs > 0 ? performance.now() + guards.requestMs : Infinity;
  let done = false;
  // The current rate window: time spent waiting for the sender, and what it sent meanwhile.
  let waitedMs = 0;
  let sent = 0;
  const closeWindowIfDue = () => {
    if (guards.rateWindowMs === 0 || waitedMs < guards.rateWindowMs) return;
    if (sent < guards.leastPerWindow) throw slowBodyError(guards);
    waitedMs = 0;
    sent = 0;
  };
  try {
    for (;;) {
      const read = reader.read();
      const readStarted = performance.now();
      let result: Awaited<typeof read> | typeof TIMER = TIMER;
      while (result === TIMER) {
        const idleLeft = guards.idleMs > 0 ? guards.idleMs - (performance.now() - readStarted) : Infinity;
        const windowLeft = guards.rateWindowMs > 0 ? guards.rateWindowMs - waitedMs : Infinity;
        const started = performance.now();
        result = await raceTimer(read, Math.min(idleLeft, windowLeft, deadline - started));
        waitedMs += performance.now() - started;
        if (result === TIMER && performance.now() >= deadline) throw requestTimeoutError(guards.requestMs);
        if (result === TIMER && guards.idleMs > 0 && performance.now() - readStarted >= guards.idleMs) {
          throw idleTimeoutError(guards.idleMs);
        }
        if (result !== TIMER) {
          if (result.done) {
            done = true;
            return;
          }
          sent += result.value.byteLength;
        }
        closeWindowIfDue();
      }
      yield result.value;
    }
  } catch (error) {
    done = true;
    await reader.cancel(error).catch(() => {});
    throw error;
  } finally {
    // A reader that stopped early (the receiver refused the callback midway) leaves the rest
    // unread: cancel it, as iterating the stream directly would.
    if (!done) await reader.cancel().catch(() => {});
  }
}

/** The read's result, or TIMER once `ms` passed first (never, for an infinite `ms`). */
async function raceTimer<T>(read: Promise<T>, ms: number): Promise<T | typeof TIMER> {
  if (ms === Infinity) return read;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const elapsed = new Promise<typeof TIMER>((resolve) => {
    timer = setTimeout(() => resolve(TIMER), Math.max(0, ms));
  });
  try {
    return await Promise.race([read, elapsed]);
  } finally {
    clearTimeout(timer);
  }
}
