import { availableParallelism } from 'node:os';
import { GenerationError } from './generation-error.ts';
import type { GeneratedMedia, GenerateOptions, GenerationRequest, Generator } from './generator.ts';

/** Generations that may run at once by default: one per CPU core, since encoding is CPU-bound. */
const DEFAULT_GENERATION_CONCURRENCY = Math.max(1, availableParallelism());

/**
 * A counting semaphore: at most `limit` holders at a time, the others wait in arrival order.
 *
 * @example
 * const slots = new Semaphore(2);
 * const release = await slots.acquire();
 * try { await work(); } finally { release(); }
 */
export class Semaphore {
  readonly limit: number;
  private active = 0;
  private readonly queue: Array<() => void> = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`a concurrency limit must be a positive integer, not ${limit}`);
    this.limit = limit;
  }

  /** Holders right now. */
  get running(): number {
    return this.active;
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Waits for a slot; resolves with the function that gives it back (calling it twice is
   * harmless). Aborting while waiting leaves the queue and rejects with the signal's reason.
   */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.active < this.limit) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(this.releaser());
      };
      const onAbort = () => {
        const index = this.queue.indexOf(grant);
        if (index >= 0) this.queue.splice(index, 1);
        reject(signal?.reason);
      };
      this.queue.push(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.queue.shift();
      // The slot passes straight to the next waiter, so `active` stays the same.
      if (next) next();
      else this.active--;
    };
  }
}

/** A generator with a concurrency limit, and a view of its queue. */
interface LimitedGenerator extends Generator {
  readonly running: number;
  readonly waiting: number;
}

/**
 * Wraps a generator so that at most `limit` of its generations run at once; the rest wait
 * their turn. An operation aborted while waiting never starts and rejects with code `aborted`.
 *
 * @example
 * const generator = limitConcurrency(new BuiltinGenerator(), 2);
 * await Promise.all(requests.map((r) => generator.generate(r, { workDir })));
 */
export function limitConcurrency(
  generator: Generator,
  limit = DEFAULT_GENERATION_CONCURRENCY,
): LimitedGenerator {
  const slots = new Semaphore(limit);
  return {
    get running() {
      return slots.running;
    },
    get waiting() {
      return slots.waiting;
    },
    async generate(request: GenerationRequest, options: GenerateOptions): Promise<GeneratedMedia> {
      let release: () => void;
      try {
        release = await slots.acquire(options.signal);
      } catch (reason) {
        throw new GenerationError('aborted', 'the generation was aborted before it started', {
          cause: reason,
        });
      }
      try {
        return await generator.generate(request, options);
      } finally {
        release();
      }
    },
  };
}
