/**
 * What the service dashboard shows of an operation: the failure text of a failed one, times
 * with their date and zone, invisible characters as escapes, long values clamped without
 * squeezing the other columns, a named video preview, and each redelivery's outcome next to
 * its button.
 */
import { describe, expect, it } from 'vitest';
import {
  HOSTILE,
  overflowsSideways,
  pagePerTest,
  screenshot,
  skipBrowserTests,
} from '../../../mediahook/test/web/browser.ts';
import { type Api, operation, startDashboard } from './dashboard-fixture.ts';
import { pageServerPerTest } from '../../../mediahook/test/web/page-server.ts';

describe.skipIf(skipBrowserTests)('what the service dashboard shows', () => {
  const view = pagePerTest();

  const serve = pageServerPerTest(view);
  const open = (api: Api) => serve(() => startDashboard(api));

  function list(operations: unknown[]): Api {
    return (url) =>
      url.pathname === '/v1/operations' ? { json: { operations, next_before: null } } : undefined;
  }

  it("shows a failed operation's error message as text, and none when the service gives none", async () => {
    await open(
      list([
        operation('with', { error_message: `\u202Eout of ${HOSTILE}` }),
        operation('null', { error_message: null }),
        operation('older'), // an older service, without the field
        operation('ok', { state: 'succeeded', error_message: 'not shown' }),
      ]),
    );
    await view.page.locator('tr[data-id="ok"]').waitFor();
    const failure = view.page.locator('tr[data-id="with"] .error-message');
    expect(await failure.textContent()).toBe(`error: \\u202Eout of ${HOSTILE}`);
    for (const id of ['null', 'older', 'ok']) {
      expect(await view.page.locator(`tr[data-id="${id}"] .error-message`).count()).toBe(0);
    }
    expect(await view.page.locator('#operations').textContent()).not.toContain('undefined');
    expect(await view.page.locator('#operations img, #operations script').count()).toBe(0);
    expect(await view.page.title()).not.toBe('pwned');
  });

  it('shows the date of a time that is not today, and marks the times of the callback UTC', async () => {
    const now = new Date();
    const tomorrow = new Date(now.getTime() + 86_400_000).toISOString();
    const today = now.toISOString();
    await open(
      list([
        operation('later', { callback: { state: 'retrying', next_attempt_at: tomorrow, attempts: [] } }),
        operation('soon', {
          callback: {
            state: 'retrying',
            next_attempt_at: today,
            attempts: [
              { at: '2025-03-04T05:06:07.089Z', duration_ms: 3, status_code: 500, error: null },
              { at: today, duration_ms: 4, status_code: 503, error: null },
            ],
          },
        }),
      ]),
    );
    await view.page.locator('tr[data-id="soon"]').waitFor();
    expect(await view.page.locator('tr[data-id="later"] .next-try').textContent()).toBe(
      `next try ${tomorrow.slice(0, 10)} ${tomorrow.slice(11, 19)} UTC`,
    );
    expect(await view.page.locator('tr[data-id="soon"] .next-try').textContent()).toBe(
      `next try ${today.slice(11, 19)} UTC`,
    );
    const attempts = await view.page.locator('tr[data-id="soon"] .attempts li').allTextContents();
    expect(attempts).toEqual(['2025-03-04 05:06:07.089 — 500 (3 ms)', `${today.slice(11, 23)} — 503 (4 ms)`]);
    expect(await view.page.locator('tr[data-id="later"] .next-try time').getAttribute('datetime')).toBe(
      tomorrow,
    );
  });

  it('shows invisible characters as escapes and keeps what receivers said in its own direction', async () => {
    const id = '\u202Egpj.exe';
    await open(
      list([
        operation(id, {
          webhook_url: 'http://127.0.0.1:9/\u2066hook\u2069',
          callback: {
            state: 'dead',
            next_attempt_at: null,
            attempts: [
              {
                at: '2026-01-01T10:00:00.000Z',
                duration_ms: 3,
                status_code: null,
                error: 'refused\u200F',
                response_head: null,
              },
              {
                at: '2026-01-01T10:00:01.000Z',
                duration_ms: 3,
                status_code: 500,
                error: null,
                response_head: 'HTTP/1.1 500\n\u202Bשגיאה\u200B',
              },
            ],
          },
        }),
      ]),
    );
    const row = view.page.locator('#operations tr').first();
    await row.waitFor();
    const text = (await row.textContent()) ?? '';
    expect(text).not.toMatch(/[\u200B-\u200F\u202A-\u202E\u2066-\u2069]/);
    for (const escape of ['\\u202Egpj.exe', '/\\u2066hook\\u2069', 'refused\\u200F', '\\u202Bשגיאה\\u200B']) {
      expect(text).toContain(escape);
    }
    expect(await row.locator('code .cc').first().textContent()).toBe('\\u202E');
    expect(await row.locator('.attempts bdi').count()).toBeGreaterThanOrEqual(3);
    expect(await row.getByRole('button', { name: 'Redeliver the callback of \\u202Egpj.exe' }).count()).toBe(
      1,
    );
  });

  it('keeps the columns readable and each row a few lines high, however long a value', async () => {
    const uuid = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    await open(
      list([
        operation(uuid, { error_message: 'lengthy failure '.repeat(128) }),
        operation(`${uuid.slice(0, -1)}c`, { webhook_url: `http://127.0.0.1:9/${'u'.repeat(800)}` }),
        operation(`${uuid.slice(0, -1)}d`, {
          callback: {
            state: 'dead',
            next_attempt_at: null,
            attempts: [
              {
                at: '2026-01-01T10:00:00.000Z',
                duration_ms: 1,
                status_code: null,
                error: 'x'.repeat(30_000),
              },
            ],
          },
        }),
      ]),
    );
    const rows = view.page.locator('#operations tr');
    await expect.poll(() => rows.count()).toBe(3);
    // Measured by polling: a row the list's refresh is replacing has no box for that moment.
    const heightOf = async (locator: typeof rows) => (await locator.boundingBox())?.height ?? Infinity;
    for (const i of [0, 1, 2]) await expect.poll(() => heightOf(rows.nth(i))).toBeLessThan(260);
    // The id takes one line and no column is squeezed to a few characters a line.
    for (const i of [0, 1, 2])
      await expect.poll(() => heightOf(rows.nth(i).locator('code.id'))).toBeLessThan(20);
    const widths = await view.page
      .locator('thead th')
      .evaluateAll((cells: any[]) => cells.map((cell) => cell.getBoundingClientRect().width));
    expect(Math.min(...widths)).toBeGreaterThan(90);
    await rows.nth(2).getByRole('button', { name: 'show all 30,000 characters' }).click();
    expect(await rows.nth(2).textContent()).toContain('x'.repeat(30_000));
    await view.page.setViewportSize({ width: 375, height: 800 });
    expect(await overflowsSideways(view.page)).toBe(false);
    await screenshot(view.page, 'dashboard-long-narrow');
  });

  it('gives a video preview an accessible name, as an image has', async () => {
    await open((url) => {
      if (url.pathname === '/v1/operations') {
        const done = {
          state: 'succeeded',
          callback: { state: 'delivered', next_attempt_at: null, attempts: [] },
        };
        return {
          json: {
            operations: [operation('vid', { ...done, kind: 'video' }), operation('img', done)],
            next_before: null,
          },
        };
      }
      if (url.pathname.endsWith('/result'))
        return { body: Buffer.from('bytes'), type: 'application/octet-stream' };
      return undefined;
    });
    await view.page.locator('tr[data-id="vid"] video[src^="blob:"]').waitFor();
    expect(await view.page.locator('tr[data-id="vid"] video').getAttribute('aria-label')).toBe(
      'result of vid',
    );
    expect(await view.page.locator('tr[data-id="img"] img').getAttribute('alt')).toBe('result of img');
  });

  it("tells each redelivery's outcome next to its button, and drops a failure the service disproved", async () => {
    view.watch.ignore.push(/status of 502|ERR_CONNECTION_REFUSED|ERR_FAILED/);
    await open((url) => {
      if (url.pathname === '/v1/operations') {
        return {
          json: { operations: [operation('op-1'), operation('op-2'), operation('op-3')], next_before: null },
        };
      }
      if (url.pathname === '/v1/operations/op-1/redeliver') return { status: 202, json: { id_gen: 'op-1' } };
      if (url.pathname === '/v1/operations/op-2/redeliver') {
        return { status: 502, json: { error: { code: 'bad_gateway', message: 'the store is away' } } };
      }
      return undefined;
    });
    const outcome = (id: string) => view.page.locator(`tr[data-id="${id}"] .outcome`);
    await view.page.getByRole('button', { name: 'Redeliver the callback of op-1' }).click();
    await expect.poll(() => outcome('op-1').textContent()).toBe('redelivery queued');
    await view.page.getByRole('button', { name: 'Redeliver the callback of op-2' }).click();
    await expect.poll(() => outcome('op-2').textContent()).toBe('redelivery failed: the store is away');
    // The service gone: the redelivery fails for want of it, until the service answers again.
    const everything = (url: URL) => url.pathname.startsWith('/v1/');
    await view.page.route(everything, (route) => route.abort('connectionrefused'));
    await view.page.getByRole('button', { name: 'Redeliver the callback of op-3' }).click();
    await expect.poll(() => outcome('op-3').textContent()).toContain('cannot be reached');
    expect(await view.page.locator('#message').textContent()).toContain('cannot be reached');
    await view.page.unroute(everything);
    await expect.poll(() => outcome('op-3').textContent(), { timeout: 10_000 }).toBe('');
    expect(await view.page.locator('#message').textContent()).toBe('');
    // A failure the service itself told stays; so does a success.
    expect(await outcome('op-2').textContent()).toBe('redelivery failed: the store is away');
    expect(await outcome('op-1').textContent()).toBe('redelivery queued');
    expect(view.watch.problems).toEqual([]);
  });
});
