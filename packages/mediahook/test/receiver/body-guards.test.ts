import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import {
  type BodyGuardOptions,
  bodyGuardsOf,
  guardedWebBody as guardedWebBodyOf,
} from '../../src/receiver/adapters/body-guards.ts';

/** The guarded body, the guards resolved from `options` as a handler resolves them. */
function guardedWebBody(stream: ReadableStream<Uint8Array>, options: BodyGuardOptions) {
  return guardedWebBodyOf(stream, bodyGuardsOf(options));
}

/** A Web body whose chunks the test pushes itself, recording whether it was cancelled. */
function pushedBody() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const state = { cancelled: false, reason: undefined as unknown };
  const stream = new ReadableStream<Uint8Array>({
    start: (c) => {
      controller = c;
    },
    cancel: (reason) => {
      state.cancelled = true;
      state.reason = reason;
    },
  });
  return {
    stream,
    push: (size: number) => controller.enqueue(new Uint8Array(size)),
    end: () => controller.close(),
    state,
  };
}

async function drain(body: AsyncIterable<Uint8Array>, afterEach?: () => Promise<void>): Promise<number> {
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.byteLength;
    await afterEach?.();
  }
  return bytes;
}

/**
 * Pushes 10 bytes every 20 ms (never idle; 500 bytes/s) until the body guarded by `options`
 * fails with `timeout` and a message matching `message`; the stream must then be cancelled.
 */
async function expectTrickleTimeout(options: BodyGuardOptions, message: RegExp): Promise<void> {
  const body = pushedBody();
  const trickle = setInterval(() => body.push(10), 20);
  try {
    await expect(drain(guardedWebBody(body.stream, options))).rejects.toMatchObject({
      code: 'timeout',
      message: expect.stringMatching(message),
    });
  } finally {
    clearInterval(trickle);
  }
  expect(body.state.cancelled).toBe(true);
}

describe('bodyGuardsOf', () => {
  const rate = { minBytesPerSecond: 1024, rateWindowMs: 30_000, leastPerWindow: 30_720 };
  const noRate = { minBytesPerSecond: 0, rateWindowMs: 0, leastPerWindow: 0 };
  it.each([
    [{}, { idleMs: 30_000, ...rate, requestMs: 0 }],
    [{ idleTimeoutMs: 0 }, { idleMs: 0, ...rate, requestMs: 0 }],
    [{ minBytesPerSecond: 0 }, { idleMs: 30_000, ...noRate, requestMs: 0 }],
    [{ rateWindowMs: 0 }, { idleMs: 30_000, ...noRate, requestMs: 0 }],
    [
      { minBytesPerSecond: 10, rateWindowMs: 500 },
      { idleMs: 30_000, minBytesPerSecond: 10, rateWindowMs: 500, leastPerWindow: 5, requestMs: 0 },
    ],
    [{ requestTimeoutMs: 60_000 }, { idleMs: 30_000, ...rate, requestMs: 60_000 }],
  ])('%j → %j', (options, guards) => {
    expect(bodyGuardsOf(options)).toEqual(guards);
  });
});

describe('guardedWebBody', () => {
  it('passes every chunk through, in order, and ends with the stream', async () => {
    const body = pushedBody();
    body.push(3);
    body.push(5);
    body.end();
    const sizes: number[] = [];
    for await (const chunk of guardedWebBody(body.stream, { idleTimeoutMs: 1000 }))
      sizes.push(chunk.byteLength);
    expect(sizes).toEqual([3, 5]);
    expect(body.state.cancelled).toBe(false);
  });

  it('fails with timeout and cancels the stream when the sender goes silent', async () => {
    const body = pushedBody();
    body.push(10);
    const reading = drain(guardedWebBody(body.stream, { idleTimeoutMs: 100, minBytesPerSecond: 0 }));
    await expect(reading).rejects.toMatchObject({
      code: 'timeout',
      message: expect.stringMatching(/sent nothing for 100 ms/),
    });
    expect(body.state.cancelled).toBe(true);
  });

  it('fails with timeout when the body trickles under the minimum rate, though never idle', async () => {
    // 500 bytes/s against the 2,000 asked for.
    await expectTrickleTimeout(
      { idleTimeoutMs: 100, minBytesPerSecond: 2000, rateWindowMs: 200 },
      /under 2000 bytes\/s/,
    );
  });

  it('fails with timeout when the body keeps coming past the request timeout', async () => {
    // Never idle, and the minimum rate is off; the whole body never comes.
    await expectTrickleTimeout(
      { idleTimeoutMs: 100, minBytesPerSecond: 0, requestTimeoutMs: 200 },
      /did not arrive whole within 200 ms/,
    );
  });

  it('does not blame the sender for the time the reader spends on each chunk', async () => {
    const body = pushedBody();
    for (let i = 0; i < 4; i++) body.push(100);
    body.end();
    // Each chunk takes the reader longer than the idle timeout and the rate window: the sender,
    // whose bytes were all there at once, never kept it waiting.
    const reading = drain(
      guardedWebBody(body.stream, { idleTimeoutMs: 30, minBytesPerSecond: 1e6, rateWindowMs: 30 }),
      () => sleep(60),
    );
    await expect(reading).resolves.toBe(400);
  });

  it('cancels the rest of the stream when the reader stops early', async () => {
    const body = pushedBody();
    body.push(10);
    for await (const chunk of guardedWebBody(body.stream, {})) {
      expect(chunk.byteLength).toBe(10);
      break;
    }
    expect(body.state.cancelled).toBe(true);
  });

  it('waits as long as it takes with both guards off', async () => {
    const body = pushedBody();
    setTimeout(() => {
      body.push(1);
      body.end();
    }, 150);
    await expect(
      drain(guardedWebBody(body.stream, { idleTimeoutMs: 0, minBytesPerSecond: 0 })),
    ).resolves.toBe(1);
  });
});
