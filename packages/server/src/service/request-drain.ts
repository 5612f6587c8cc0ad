import type { Server, ServerResponse } from 'node:http';

/** Time for handlers still running once their connections are gone (a store call finishing). */
const SETTLE_MS = 1000;

/** Resolves true when `work` settles within `ms`, false when the time runs out first. */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The requests the API is answering, so that a shutdown can let them end on an open store: it
 * stops accepting, gives those in flight a grace period, then closes every connection, and
 * resolves only once no handler runs any more (the store may close then).
 */
export class RequestDrain {
  /** Per response: settled once its handler has and the response is closed. */
  readonly #active = new Map<ServerResponse, Promise<void>>();
  #draining = false;

  /** Tracks one request until `handled` settles and its response has closed. */
  track(res: ServerResponse, handled: Promise<void>): void {
    if (this.#draining) res.setHeader('connection', 'close');
    const closed = new Promise<void>((resolve) => {
      if (res.closed) resolve();
      else res.once('close', resolve);
    });
    const done = Promise.all([handled, closed]).then(() => {
      this.#active.delete(res);
    });
    this.#active.set(res, done);
  }

  /**
   * Closes `server`: no new connections; answers in flight end with `Connection: close`; after
   * `graceMs` the connections still open are closed, whatever they were doing.
   */
  async close(server: Server, graceMs: number): Promise<void> {
    this.#draining = true;
    for (const res of this.#active.keys()) if (!res.headersSent) res.setHeader('connection', 'close');
    // Node's close() also ends the idle keep-alive connections; an error only says it was not listening.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    const drained = () => Promise.all([closed, ...this.#active.values()]);
    if (await within(drained(), graceMs)) return;
    server.closeAllConnections();
    await within(drained(), SETTLE_MS);
  }
}
