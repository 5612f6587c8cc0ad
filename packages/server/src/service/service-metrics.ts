import type { QueueDepth } from '../store/index.ts';

const LATENCY_BUCKETS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000];

/**
 * The service's Prometheus metrics: operations by outcome, deliveries by outcome, attempt
 * latency, and the queue depth read from the store at scrape time.
 */
export class ServiceMetrics {
  readonly #operationsCreated = new Map<string, number>();
  readonly #operationsFinished = new Map<string, number>();
  readonly #attempts = new Map<string, number>();
  readonly #latencyBuckets = new Array<number>(LATENCY_BUCKETS_MS.length).fill(0);
  #latencyCount = 0;
  #latencySum = 0;

  operationCreated(kind: string, family: string): void {
    increment(this.#operationsCreated, `kind="${kind}",family="${family}"`);
  }

  operationFinished(state: string): void {
    increment(this.#operationsFinished, `state="${state}"`);
  }

  /** One delivery attempt: `outcome` is delivered, gone, retrying or dead. */
  attempt(outcome: string, durationMs: number): void {
    increment(this.#attempts, `outcome="${outcome}"`);
    this.#latencyCount++;
    this.#latencySum += durationMs / 1000;
    LATENCY_BUCKETS_MS.forEach((bound, i) => {
      if (durationMs <= bound) this.#latencyBuckets[i]!++;
    });
  }

  /** The text exposition format. */
  render(depth: QueueDepth): string {
    const lines: string[] = [];
    const counter = (name: string, help: string, values: Map<string, number>) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
      for (const [labels, value] of values) lines.push(`${name}{${labels}} ${value}`);
    };
    counter('mediahook_operations_created_total', 'Operations accepted by the API.', this.#operationsCreated);
    counter(
      'mediahook_operations_finished_total',
      'Operations finished, by state.',
      this.#operationsFinished,
    );
    counter('mediahook_delivery_attempts_total', 'Callback delivery attempts, by outcome.', this.#attempts);
    lines.push(
      '# HELP mediahook_delivery_attempt_seconds Duration of callback delivery attempts.',
      '# TYPE mediahook_delivery_attempt_seconds histogram',
    );
    LATENCY_BUCKETS_MS.forEach((bound, i) => {
      lines.push(
        `mediahook_delivery_attempt_seconds_bucket{le="${bound / 1000}"} ${this.#latencyBuckets[i]}`,
      );
    });
    lines.push(
      `mediahook_delivery_attempt_seconds_bucket{le="+Inf"} ${this.#latencyCount}`,
      `mediahook_delivery_attempt_seconds_sum ${this.#latencySum}`,
      `mediahook_delivery_attempt_seconds_count ${this.#latencyCount}`,
      '# HELP mediahook_operations Operations in the store, by state.',
      '# TYPE mediahook_operations gauge',
    );
    for (const [state, count] of Object.entries(depth.operations))
      lines.push(`mediahook_operations{state="${state}"} ${count}`);
    lines.push(
      '# HELP mediahook_callbacks Callbacks in the outbox, by state.',
      '# TYPE mediahook_callbacks gauge',
    );
    for (const [state, count] of Object.entries(depth.callbacks))
      lines.push(`mediahook_callbacks{state="${state}"} ${count}`);
    return `${lines.join('\n')}\n`;
  }
}

function increment(map: Map<string, number>, labels: string): void {
  map.set(labels, (map.get(labels) ?? 0) + 1);
}
