import type { WorkEvent, WorkListener, WorkSubscription } from './store.ts';

/** Receives what a listener threw, so that one faulty listener neither stops the others nor the store. */
type ListenerErrorHandler = (error: unknown) => void;

export const warnListenerError: ListenerErrorHandler = (error) => {
  process.emitWarning(error instanceof Error ? error : new Error(String(error)), 'MediahookStoreWarning');
};

/**
 * The listeners of one store's wake-ups. Delivery is synchronous and each listener is
 * isolated: a throw goes to `onError`, the rest still hear the event.
 *
 * @example
 * const signal = new WorkSignal();
 * const stop = signal.subscribe((e) => console.log(e.kind), Promise.resolve());
 * signal.emit({ kind: 'callback', id_gen: null });
 * stop();
 */
export class WorkSignal {
  readonly #listeners = new Set<WorkListener>();
  readonly #onError: ListenerErrorHandler;

  constructor(onError: ListenerErrorHandler = warnListenerError) {
    this.#onError = onError;
  }

  get size(): number {
    return this.#listeners.size;
  }

  subscribe(listener: WorkListener, ready: Promise<void>): WorkSubscription {
    // A wrapper per subscription, so the same function subscribed twice is two subscriptions.
    const entry: WorkListener = (event) => listener(event);
    this.#listeners.add(entry);
    const unsubscribe = () => {
      this.#listeners.delete(entry);
    };
    return Object.assign(unsubscribe, { ready });
  }

  emit(event: WorkEvent): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (error) {
        this.#onError(error);
      }
    }
  }

  clear(): void {
    this.#listeners.clear();
  }
}
