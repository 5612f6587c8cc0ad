/**
 * The service dashboard under strain, in a real browser: its Content-Security-Policy, API
 * errors and a service gone, a failed redelivery, pages of operations, hostile and long texts,
 * a narrow screen, and keyboard focus across refreshes. The API answers are faked where the
 * real service cannot be made to give them.
 */
import type { Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningService, startService } from '../service/service-harness.ts';
import { operation } from './dashboard-fixture.ts';
import {
  expectHostileShownSafely,
  HOSTILE,
  pagePerTest,
  skipBrowserTests,
} from '../../../mediahook/test/web/browser.ts';

/** Answers the operation list with `operations` (and `next_before`) instead of the service. */
async function fakeList(page: Page, answer: (url: URL) => Record<string, unknown>): Promise<void> {
  await page.route(
    (url) => url.pathname === '/v1/operations',
    (route: Route) => route.fulfill({ json: answer(new URL(route.request().url())) }),
  );
}

describe.skipIf(skipBrowserTests)('the service dashboard under strain', () => {
  const view = pagePerTest();
  let run: RunningService;

  beforeAll(async () => {
    run = await startService();
  }, 60_000);

  afterAll(async () => {
    await run?.stop();
  });

  it('runs under a CSP that admits only its own script and style, loading nothing from elsewhere', async () => {
    const created = await run.post('/v1/operations', {
      kind: 'image',
      family: 'B',
      prompt: 'csp',
      fail_with: 'csp failure',
      webhook_url: 'http://127.0.0.1:9/hook',
    });
    const elsewhere: string[] = [];
    view.page.on('request', (request) => {
      if (!request.url().startsWith(run.url)) elsewhere.push(request.url());
    });
    const response = await view.page.goto(run.url);
    const policy = response?.headers()['content-security-policy'] ?? '';
    expect(policy).toContain("default-src 'none'");
    expect(policy).toMatch(/script-src 'sha256-[^']+'(;|$)/);
    expect(response?.headers()['x-content-type-options']).toBe('nosniff');
    await view.page.locator(`tr[data-id="${created.body.id_gen}"]`).waitFor({ timeout: 10_000 });
    expect(elsewhere).toEqual([]);
    expect(view.watch.problems).toEqual([]);
  });

  it('says when the API fails or the service is gone, and recovers', async () => {
    view.watch.ignore.push(/status of 500|ERR_CONNECTION_REFUSED|ERR_FAILED/);
    await view.page.goto(run.url);
    const problem = view.page.locator('#problem');
    const list = (url: URL) => url.pathname === '/v1/operations';
    await view.page.route(list, (route) =>
      route.fulfill({ status: 500, json: { error: { code: 'internal_error', message: 'store down' } } }),
    );
    await expect.poll(() => problem.textContent(), { timeout: 10_000 }).toContain('store down');
    await view.page.unroute(list);
    await view.page.route(list, (route) => route.abort('connectionrefused'));
    await expect.poll(() => problem.textContent(), { timeout: 10_000 }).toContain('cannot be reached');
    await view.page.unroute(list);
    await expect.poll(() => problem.textContent(), { timeout: 10_000 }).toBe('');
    expect(view.watch.problems).toEqual([]);
  });

  it("tells why a redelivery failed, even when the answer is not the API's JSON", async () => {
    view.watch.ignore.push(/status of 502/);
    await fakeList(view.page, () => ({ operations: [operation('op-1')], next_before: null }));
    await view.page.route('**/redeliver', (route) =>
      route.fulfill({ status: 502, contentType: 'text/html', body: '<h1>Bad gateway</h1>' }),
    );
    await view.page.goto(run.url);
    const button = view.page.getByRole('button', { name: 'Redeliver the callback of op-1' });
    await button.click();
    await expect.poll(() => view.page.locator('#message').textContent()).toContain('failed: HTTP 502');
    expect(await button.isEnabled()).toBe(true);
    expect(view.watch.problems).toEqual([]);
  });

  it('pages through operations with Older and Newer', async () => {
    const asked: (string | null)[] = [];
    await fakeList(view.page, (url) => {
      const before = url.searchParams.get('before');
      asked.push(before);
      return before === 'op-100'
        ? { operations: [operation('op-101')], next_before: null }
        : { operations: [operation('op-1'), operation('op-100')], next_before: 'op-100' };
    });
    await view.page.goto(run.url);
    await view.page.locator('tr[data-id="op-1"]').waitFor();
    expect(await view.page.locator('#newer').isDisabled()).toBe(true);
    await view.page.getByRole('button', { name: 'Older' }).click();
    await view.page.locator('tr[data-id="op-101"]').waitFor();
    expect(asked).toContain('op-100');
    expect(await view.page.locator('#older').isDisabled()).toBe(true);
    await view.page.getByRole('button', { name: 'Newer' }).click();
    await view.page.locator('tr[data-id="op-1"]').waitFor();
  });

  it('shows hostile and long texts as text, within the screen, wide or narrow', async () => {
    const long = 'y'.repeat(1500);
    const hostile = operation(HOSTILE, {
      state: HOSTILE,
      webhook_url: `http://127.0.0.1:9/${long}?q=${HOSTILE}`,
      callback: {
        state: HOSTILE,
        next_attempt_at: null,
        attempts: [
          {
            at: '2026-01-01T10:00:00.000Z',
            duration_ms: 3,
            status_code: null,
            error: `\u202Eright-to-left ${HOSTILE} ${long}`,
            response_head: HOSTILE,
          },
        ],
      },
    });
    await fakeList(view.page, () => ({ operations: [hostile], next_before: null }));
    await view.page.goto(run.url);
    const row = view.page.locator('#operations tr').first();
    await row.waitFor();
    expect(await row.textContent()).toContain(HOSTILE);
    expect(await view.page.locator('#operations img, #operations script').count()).toBe(0);
    await expectHostileShownSafely(view, 'dashboard-narrow-hostile');
  });

  it('keeps keyboard focus on a Redeliver button while the list refreshes and changes', async () => {
    let operations = [operation('op-1')];
    await fakeList(view.page, () => ({ operations, next_before: null }));
    await view.page.goto(run.url);
    const button = view.page.getByRole('button', { name: 'Redeliver the callback of op-1' });
    await button.focus();
    operations = [operation('op-2'), operation('op-1')];
    await view.page.locator('tr[data-id="op-2"]').waitFor({ timeout: 10_000 });
    expect(
      await button.evaluate(
        (node) => node === (node.ownerDocument as { activeElement: unknown }).activeElement,
      ),
    ).toBe(true);
  });
});
