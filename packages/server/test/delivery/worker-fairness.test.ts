/**
 * One receiver's trouble must stay its own: the circuit breaker pauses a failing receiver while
 * the others are served, and a hanging receiver holds at most its per-receiver share of slots.
 * Both stores.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryFixture, deliveryBackends, instrument, waitFor, waitForStates } from './harness.ts';
import { type RecordingReceiver, startRecordingReceiver } from './receivers.ts';

const backends = await deliveryBackends('delivery fairness');

describe.each(backends)('delivery fairness on $name', (kind) => {
  let f: DeliveryFixture;
  let failing: RecordingReceiver;
  let healthy: RecordingReceiver;

  beforeEach(async () => {
    f = await DeliveryFixture.create(kind);
    failing = await startRecordingReceiver();
    healthy = await startRecordingReceiver();
    f.defer(() => failing.close());
    f.defer(() => healthy.close());
  });
  afterEach(async () => {
    await f.dispose();
  });

  it('opens the circuit of a receiver after 3 failures in a row, serves the others, then probes', async () => {
    const openMs = 1_000;
    failing.script = () => ({ status: 500 });
    const bad = await f.finishedMany(4, failing.url);
    const good = await f.finishedMany(4, healthy.url);
    // One in flight per receiver, so the count of requests before the circuit opens is exact.
    await f.worker({
      perEndpointLimit: 1,
      circuit: { failureThreshold: 3, openMs, maxOpenMs: 10_000 },
    });
    await waitForStates(f, good, 'delivered');
    const key = `127.0.0.1:${failing.port}`;
    await waitFor(
      'the circuit to open',
      async () => (await f.store.getEndpoint(key)).circuit_state === 'open',
    );
    const opened = await f.store.getEndpoint(key);
    expect(opened.consecutive_failures).toBe(3);
    expect(opened.open_until! - Date.now()).toBeGreaterThan(openMs / 2);

    // Open: the retries (due after 50 ms) and the other callbacks all wait.
    await new Promise((resolve) => setTimeout(resolve, openMs / 2));
    expect(failing.requests).toHaveLength(3);
    expect(healthy.requests).toHaveLength(4);

    // The receiver recovers; once the pause is over one probe closes the circuit again.
    failing.script = () => 'real';
    await waitForStates(f, bad, 'delivered', 5_000);
    const probe = failing.requests[3]!;
    expect(probe.startedAt).toBeGreaterThanOrEqual(opened.open_until! - 5);
    expect(await f.store.getEndpoint(key)).toMatchObject({
      circuit_state: 'closed',
      consecutive_failures: 0,
    });
    expect(f.unexpectedErrors()).toEqual([]);
  });

  it('re-opens the circuit for longer when the probe fails', async () => {
    failing.script = () => ({ status: 502 });
    const [id] = await f.finishedMany(1, failing.url);
    await f.worker({
      retry: { schedule: [10, 10, 10, 10, 10], jitter: 0, retryAfterMinMs: 0, retryAfterMaxMs: 0 },
      circuit: { failureThreshold: 2, openMs: 200, maxOpenMs: 10_000 },
    });
    const key = `127.0.0.1:${failing.port}`;
    await waitFor('a failed probe', () => failing.requests.length === 3);
    await waitFor(
      'the circuit to re-open',
      async () => (await f.store.getEndpoint(key)).consecutive_failures === 3,
    );
    const reopened = await f.store.getEndpoint(key);
    expect(reopened.circuit_state).toBe('open');
    // The second opening doubles the first: 400 ms from the probe's failure.
    expect(reopened.open_until! - failing.requests[2]!.startedAt).toBeGreaterThanOrEqual(350);
    // Between the two probes nothing was sent, although retries were due every 10 ms.
    const [, second, third] = failing.requests;
    expect(third!.startedAt - second!.startedAt).toBeGreaterThanOrEqual(190);
    await waitForStates(f, [id!], 'retrying');
  });

  it('lets a hanging receiver hold only its share of slots while another is served', async () => {
    failing.script = () => 'hang';
    const counted = instrument(f.store);
    // The hanging receiver's callbacks are older, so a plain oldest-first queue would serve them first.
    const hung = await f.finishedMany(6, failing.url);
    const good = await f.finishedMany(6, healthy.url);
    const started = Date.now();
    await f.worker({
      store: counted.store,
      concurrency: 4,
      perEndpointLimit: 2,
      senderOptions: { ssrf: { allowPrivate: true }, responseTimeoutMs: 5_000 },
    });
    await waitForStates(f, good, 'delivered', 4_000);
    // All served well before the hanging requests could time out.
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(failing.maxInFlight).toBe(2);
    expect(failing.requests).toHaveLength(2);
    expect(healthy.requests).toHaveLength(6);

    // With the hanging receiver at its cap and its other callbacks due, the worker must wait
    // for a slot, not ask the store again and again (a spinning loop makes hundreds of claims;
    // a backing-off one about one per doubling pause from 50 ms).
    const claimsBefore = counted.calls.get('claimCallbacks') ?? 0;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const claims = (counted.calls.get('claimCallbacks') ?? 0) - claimsBefore;
    expect(claims).toBeLessThanOrEqual(8);
    expect(hung.length - 2).toBe(4);
    failing.dropConnections();
  });
});
