import pg from 'pg';
import type { WorkEvent } from '../store.ts';

const FIRST_RETRY_MS = 100;
const LAST_RETRY_MS = 5000;

/** The NOTIFY payload of one wake-up; short, well under PostgreSQL's 8000-byte limit. */
export function encodeWorkEvent(event: WorkEvent): string {
  return JSON.stringify({ kind: event.kind, id_gen: event.id_gen });
}

function decodeWorkEvent(payload: string | undefined): WorkEvent | undefined {
  try {
    const value = JSON.parse(payload ?? '') as Partial<WorkEvent>;
    if (value.kind !== 'operation' && value.kind !== 'callback') return undefined;
    return { kind: value.kind, id_gen: typeof value.id_gen === 'string' ? value.id_gen : null };
  } catch {
    return undefined;
  }
}

interface NotificationListenerOptions {
  client: pg.ClientConfig;
  channel: string;
  onEvent: (event: WorkEvent) => void;
  onError: (error: unknown) => void;
}

/**
 * LISTEN on a dedicated connection: a pooled one would be handed to queries and lose the
 * subscription. When the connection drops it reconnects with backoff, and then announces a
 * wake-up of each kind, because notifications sent meanwhile are lost for good.
 *
 * @example
 * const listener = new NotificationListener({ client: { connectionString }, channel, onEvent, onError });
 * await listener.ready;
 */
export class NotificationListener {
  readonly ready: Promise<void>;
  readonly #options: NotificationListenerOptions;
  #client: pg.Client | undefined;
  #closed = false;
  #markReady!: () => void;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryMs = FIRST_RETRY_MS;

  constructor(options: NotificationListenerOptions) {
    this.#options = options;
    this.ready = new Promise((resolve) => {
      this.#markReady = resolve;
    });
    void this.#connect(false);
  }

  async #connect(reconnecting: boolean): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client(this.#options.client);
    client.on('error', (error) => this.#options.onError(error));
    client.on('notification', (message) => {
      if (message.channel !== this.#options.channel) return;
      const event = decodeWorkEvent(message.payload);
      if (event !== undefined) this.#options.onEvent(event);
    });
    client.on('end', () => {
      if (this.#client === client) this.#client = undefined;
      if (!this.#closed) this.#scheduleRetry();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${client.escapeIdentifier(this.#options.channel)}`);
    } catch (error) {
      this.#options.onError(error);
      // 'end' follows when the connection was up; otherwise retry from here.
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      this.#scheduleRetry();
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    this.#retryMs = FIRST_RETRY_MS;
    this.#markReady();
    if (reconnecting) {
      this.#options.onEvent({ kind: 'operation', id_gen: null });
      this.#options.onEvent({ kind: 'callback', id_gen: null });
    }
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#retryTimer !== undefined) return;
    const delay = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, LAST_RETRY_MS);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      void this.#connect(true);
    }, delay);
    // Waiting to reconnect must not keep a process alive that has nothing else to do.
    this.#retryTimer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    this.#markReady();
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }
}
