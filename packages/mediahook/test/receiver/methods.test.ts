/**
 * What the library's handlers answer besides a callback: a method other than POST (405, through
 * every adapter), and a handler that throws (500 and `onHandlerError`).
 */
import { request } from 'undici';
import { describe, expect, it, vi } from 'vitest';
import type { ReceivedCallback } from '../../src/receiver/receiver.ts';
import { ADAPTERS, startReceiver } from './adapters.ts';
import { send, storedFiles, wire } from './helpers.ts';

describe.each(ADAPTERS)('$name', (adapter) => {
  it.each(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'])(
    'answers %s with 405, Allow: POST and method_not_allowed, reading nothing',
    async (method) => {
      const harness = await startReceiver(adapter);
      const callback = await wire();
      const answer = await request(harness.url, {
        method,
        headers: { 'content-type': callback.contentType },
        body: method === 'GET' ? null : callback.body,
      });
      expect(answer.statusCode).toBe(405);
      expect(answer.headers['allow']).toBe('POST');
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(await answer.body.json()).toEqual({
        error: { code: 'method_not_allowed', message: `callbacks are POSTed, not ${method}` },
      });
      await harness.settled(1);
      expect(harness.outcomes[0]).toMatchObject({
        verdict: 'rejected',
        error: { code: 'method_not_allowed' },
      });
      expect(harness.successes).toHaveLength(0);
      expect(await storedFiles(harness.out)).toEqual([]);
      // The same callback POSTed is taken.
      expect((await send(harness.url, callback)).status).toBe(200);
    },
  );

  it('answers HEAD with 405 and Allow: POST, without a body', async () => {
    const harness = await startReceiver(adapter);
    const answer = await request(harness.url, { method: 'HEAD' });
    expect(answer.statusCode).toBe(405);
    expect(answer.headers['allow']).toBe('POST');
    expect(await answer.body.text()).toBe('');
  });

  it('tells onHandlerError of a handler that throws, with the callback, besides the 500', async () => {
    const told: { error: unknown; callback: ReceivedCallback }[] = [];
    const failure = new Error('database is down');
    const harness = await startReceiver(adapter, {
      onSuccess: () => {
        throw failure;
      },
      onHandlerError: (error, callback) => told.push({ error, callback }),
    });
    const callback = await wire();
    const answer = await send(harness.url, callback);
    expect(answer.status).toBe(500);
    expect(answer.body.error?.code).toBe('handler_failed');
    expect(told).toHaveLength(1);
    expect(told[0]!.error).toBe(failure);
    expect(told[0]!.callback).toMatchObject({ id_gen: callback.id, event: 'success' });
  });
});

describe('a handler that throws, without onHandlerError', () => {
  it('is reported in one line on stderr naming the id_gen, and a failing onHandlerError only warns', async () => {
    const lines: string[] = [];
    const printed = vi.spyOn(console, 'error').mockImplementation((line: unknown) => {
      lines.push(String(line));
    });
    try {
      const harness = await startReceiver(ADAPTERS[0]!, {
        onError: async () => {
          throw new Error('queue full\nsecond line');
        },
      });
      const callback = await wire({ event: 'error', id: 'op-line\u001b[2J' });
      expect((await send(harness.url, callback)).body.error?.code).toBe('handler_failed');
      expect(lines).toEqual([
        `mediahook: onError threw for id_gen "op-line\\u001b[2J" (answered 500 handler_failed): "Error: queue full\\nsecond line"`,
      ]);
    } finally {
      printed.mockRestore();
    }
  });

  it('warns when onHandlerError itself throws, and still answers 500', async () => {
    const warned = new Promise<Error>((resolve) => process.once('warning', resolve));
    const harness = await startReceiver(ADAPTERS[0]!, {
      onSuccess: () => {
        throw new Error('disk full');
      },
      onHandlerError: () => {
        throw new Error('pager down');
      },
    });
    expect((await send(harness.url, await wire())).body.error?.code).toBe('handler_failed');
    expect((await warned).message).toBe('onHandlerError failed: pager down');
  });
});
