/**
 * The worker end to end on both stores, against receivers on 127.0.0.1: what each answer does to
 * a callback (2xx, 410, 5xx, 3xx, Retry-After, a URL the SSRF guard refuses) and what every
 * attempt records.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeliveryFixture, deliveryBackends, FAST_RETRY, waitFor, waitForStates } from './harness.ts';
import { startUnacceptingListener } from '../../../mediahook/test/unaccepting-listener.ts';
import { type RecordingReceiver, startRecordingReceiver } from './receivers.ts';

const backends = await deliveryBackends('delivery outcomes');

describe.each(backends)('delivery outcomes on $name', (kind) => {
  let f: DeliveryFixture;
  let receiver: RecordingReceiver;

  beforeEach(async () => {
    f = await DeliveryFixture.create(kind);
    receiver = await startRecordingReceiver();
    f.defer(() => receiver.close());
  });
  afterEach(async () => {
    await f.dispose();
  });

  it('retries a receiver that fails 3 times, then delivers, recording every attempt', async () => {
    const failures = 3;
    receiver.script = (r) =>
      r.n <= failures
        ? { status: 500, headers: { 'content-type': 'application/json' }, body: `{"error":"busy ${r.n}"}` }
        : 'real';
    const id = await f.finished(receiver.url);
    await f.worker();
    await waitForStates(f, [id], 'delivered');

    expect(receiver.requests.map((r) => r.status)).toEqual([500, 500, 500, 200]);
    const attempts = await f.store.listAttempts(id);
    expect(attempts.map((a) => a.status_code)).toEqual([500, 500, 500, 200]);
    expect(attempts.map((a) => a.response_head?.slice(0, 17))).toEqual([
      '{"error":"busy 1"',
      '{"error":"busy 2"',
      '{"error":"busy 3"',
      '{"received":true,',
    ]);
    const starts = receiver.requests.map((r) => r.startedAt);
    attempts.forEach((a, i) => {
      expect(a.error).toBeNull();
      // Each attempt's time is when its request went out.
      expect(Math.abs(a.at - starts[i]!)).toBeLessThan(1_000);
      expect(a.duration_ms).toBeGreaterThanOrEqual(0);
      expect(a.duration_ms).toBeLessThan(5_000);
    });
    // The schedule spaced them: 50, 100 then 150 ms after each failure.
    FAST_RETRY.schedule.forEach((delay, i) => {
      expect(starts[i + 1]! - starts[i]!).toBeGreaterThanOrEqual(delay - 5);
    });
    // The real receiver stored the very file the service kept.
    const accepted = receiver.outcomes.find((o) => o.verdict === 'accepted');
    expect(accepted?.callback?.event).toBe('success');
    const operation = await f.store.getOperationRecord('default', id);
    const sent = (await f.blobs.read(operation!.result!.key))!;
    const stored = accepted?.callback?.event === 'success' ? accepted.callback.file.path : null;
    expect(readFileSync(stored!).equals(sent)).toBe(true);
    // The operation resource shows the same history.
    const resource = await f.store.getOperation('default', id);
    expect(resource?.callback.state).toBe('delivered');
    expect(resource?.callback.attempts.map((a) => a.status_code)).toEqual([500, 500, 500, 200]);
    expect(resource?.callback.attempts[0]?.at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(f.unexpectedErrors()).toEqual([]);
  });

  it('sends every result as it was kept while reusing the buffers it reads them into', async () => {
    // Results of one size to one receiver, a few at a time: each read goes into a buffer an
    // earlier send gave back.
    const ids = await f.finishedMany(24, receiver.url, 'file');
    await f.worker({ concurrency: 3, perEndpointLimit: 3 });
    await waitForStates(f, ids, 'delivered');
    const stored = new Map(
      receiver.outcomes.flatMap((o) =>
        o.verdict === 'accepted' && o.callback?.event === 'success'
          ? [[o.callback.id_gen, o.callback.file.path]]
          : [],
      ),
    );
    for (const id of ids) {
      const operation = await f.store.getOperationRecord('default', id);
      const kept = (await f.blobs.read(operation!.result!.key))!;
      expect(readFileSync(stored.get(id)!).equals(kept)).toBe(true);
    }
    expect(f.unexpectedErrors()).toEqual([]);
  });

  it('records the class of each failure without an answer: no answer in time, then a reset', async () => {
    receiver.script = (r) => (r.n === 1 ? 'hang' : r.n === 2 ? 'reset' : 'real');
    const id = await f.finished(receiver.url);
    await f.worker({ senderOptions: { ssrf: { allowPrivate: true }, responseTimeoutMs: 300 } });
    await waitForStates(f, [id], 'delivered');
    const attempts = await f.store.listAttempts(id);
    expect(attempts.map((a) => a.status_code)).toEqual([null, null, 200]);
    expect(attempts[0]?.error).toMatch(/^response_timeout: /);
    expect(attempts[0]?.duration_ms).toBeGreaterThanOrEqual(250);
    expect(attempts[1]?.error).toMatch(/^connection_reset: /);
    expect(attempts.map((a) => a.response_head)).toEqual([
      null,
      null,
      expect.stringContaining('"received":true'),
    ]);
  });

  it('records a connect that never completes as connect_timeout, and retries it until the schedule ends', async () => {
    const listener = await startUnacceptingListener();
    f.defer(() => listener.close());
    const id = await f.finished((id_gen) => `${listener.origin}/hook/${id_gen}`, 'error');
    await f.worker({ senderOptions: { ssrf: { allowPrivate: true }, connectTimeoutMs: 300 } });
    await waitForStates(f, [id], 'dead');
    const attempts = await f.store.listAttempts(id);
    expect(attempts).toHaveLength(1 + FAST_RETRY.schedule.length);
    for (const attempt of attempts) {
      expect(attempt).toMatchObject({ status_code: null, response_head: null });
      expect(attempt.error).toMatch(/^connect_timeout: /);
      // Held to the limit, not to undici's half-second clock, which gave up after about 1 s.
      expect(attempt.duration_ms).toBeGreaterThanOrEqual(250);
      expect(attempt.duration_ms).toBeLessThan(700);
    }
  });

  it('ends dead once the schedule is used up: one first try and one per delay', async () => {
    receiver.script = () => ({ status: 503 });
    const id = await f.finished(receiver.url, 'error');
    await f.worker();
    await waitForStates(f, [id], 'dead');
    expect(receiver.requests).toHaveLength(1 + FAST_RETRY.schedule.length);
    expect((await f.store.getCallback(id))?.last_error).toBe('HTTP 503');
  });

  it('stops at 410: gone after one attempt, never tried again', async () => {
    receiver.script = () => ({ status: 410, body: 'unsubscribed' });
    const id = await f.finished(receiver.url);
    await f.worker();
    await waitForStates(f, [id], 'gone');
    // Longer than the whole schedule: a retry would have come by now.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(receiver.requests).toHaveLength(1);
    const [attempt] = await f.store.listAttempts(id);
    expect(attempt).toMatchObject({ status_code: 410, response_head: 'unsubscribed' });
  });

  it('treats a 302 as a failure to retry and never follows it', async () => {
    const elsewhere = await startRecordingReceiver();
    f.defer(() => elsewhere.close());
    receiver.script = (r) =>
      r.n === 1 ? { status: 302, headers: { location: elsewhere.url('moved') } } : 'real';
    const id = await f.finished(receiver.url, 'error');
    await f.worker();
    await waitForStates(f, [id], 'delivered');
    expect(elsewhere.connections).toBe(0);
    const [first, second] = await f.store.listAttempts(id);
    expect(first?.status_code).toBe(302);
    expect(first?.error).toBe(`redirect not followed (Location: ${elsewhere.url('moved')})`);
    expect(second?.status_code).toBe(200);
  });

  it('waits as long as Retry-After asks rather than the schedule', async () => {
    receiver.script = (r) => (r.n === 1 ? { status: 503, headers: { 'retry-after': '1' } } : 'real');
    const id = await f.finished(receiver.url, 'error');
    await f.worker();
    await waitForStates(f, [id], 'delivered');
    const [first, second] = receiver.requests;
    // The schedule alone would retry after 50 ms.
    expect(second!.startedAt - first!.startedAt).toBeGreaterThanOrEqual(950);
  });

  it('holds a Retry-After within the policy bounds', async () => {
    receiver.script = (r) =>
      r.n === 1
        ? { status: 429, headers: { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() } }
        : 'real';
    const id = await f.finished(receiver.url, 'error');
    await f.worker({ retry: { ...FAST_RETRY, retryAfterMaxMs: 300 } });
    const before = Date.now();
    await waitForStates(f, [id], 'delivered', 3_000);
    expect(Date.now() - before).toBeLessThan(2_000);
    const [first, second] = receiver.requests;
    expect(second!.startedAt - first!.startedAt).toBeGreaterThanOrEqual(290);
  });

  it('never dials a URL the default SSRF policy refuses (loopback) and ends it dead saying why', async () => {
    const id = await f.finished(receiver.url);
    const attempts: string[] = [];
    // No `ssrf` option: the default policy, which refuses 127.0.0.1 as loopback.
    await f.worker({
      senderOptions: {},
      onAttempt: (e) => attempts.push(e.attempt.verdict),
    });
    await waitForStates(f, [id], 'dead');
    // The worker reports an attempt once its outcome is written: the state can be read first.
    await waitFor('the attempt reported', () => attempts.length > 0);
    expect(receiver.connections).toBe(0);
    expect(attempts).toEqual(['refused']);
    const resource = await f.store.getOperation('default', id);
    expect(resource?.callback.attempts).toHaveLength(1);
    expect(resource?.callback.attempts[0]?.status_code).toBeNull();
    expect(resource?.callback.attempts[0]?.error).toMatch(
      /^refused by the SSRF guard: 127\.0\.0\.1 is loopback/,
    );
    // A refusal says nothing about the receiver's health: its circuit is untouched.
    const endpoint = await f.store.getEndpoint(`127.0.0.1:${receiver.port}`);
    expect(endpoint.consecutive_failures).toBe(0);
  });

  it('refuses a host name that resolves to loopback on the address it would dial', async () => {
    const url = (id: string) => `http://hooks.test:${receiver.port}/hook/${id}`;
    const id = await f.finished(url, 'error');
    await f.worker({
      senderOptions: { guard: { resolver: async () => [{ address: '127.0.0.1', family: 4 }] } },
    });
    await waitForStates(f, [id], 'dead');
    expect(receiver.connections).toBe(0);
    const [attempt] = await f.store.listAttempts(id);
    expect(attempt?.error).toMatch(/^refused by the SSRF guard: 127\.0\.0\.1 is loopback/);
  });

  it('signs so that the real receiver with the secret accepts, and a wrong secret is retried', async () => {
    const secret = `whsec_${Buffer.from('a shared secret for the tests').toString('base64')}`;
    const other = `whsec_${Buffer.from('somebody else entirely').toString('base64')}`;
    const signed = await startRecordingReceiver({ secret });
    f.defer(() => signed.close());
    const wrong = await startRecordingReceiver({ secret: other });
    f.defer(() => wrong.close());
    const good = await f.finished(signed.url);
    const bad = await f.finished(wrong.url, 'error');
    await f.worker({ senderOptions: { ssrf: { allowPrivate: true }, secrets: [secret] } });
    await waitForStates(f, [good], 'delivered');
    await waitForStates(f, [bad], 'dead');
    expect(signed.outcomes.map((o) => o.verdict)).toEqual(['accepted']);
    expect(signed.outcomes[0]?.headers['webhook-id']).toBe(good);
    const badAttempts = await f.store.listAttempts(bad);
    expect(badAttempts.map((a) => a.status_code)).toEqual([500, 500, 500, 500]);
    expect(badAttempts[0]?.response_head).toContain('bad_signature');
  });
});
