/**
 * The service dashboard as it lives in a tab: it revalidates the list through the browser's
 * cache and draws it again only on a change, rests while hidden, asks circuits only for the
 * receivers that need them (and survives one failing), and stops asking after a refused key
 * until a key is entered, with a way to forget a stored one.
 */
import { describe, expect, it } from 'vitest';
import { pagePerTest, screenshot, skipBrowserTests } from '../../../mediahook/test/web/browser.ts';
import { type Api, operation, startDashboard } from './dashboard-fixture.ts';
import { expectRestWhileHidden, pageServerPerTest } from '../../../mediahook/test/web/page-server.ts';

describe.skipIf(skipBrowserTests)('the service dashboard in a tab', () => {
  const view = pagePerTest();

  const serve = pageServerPerTest(view);
  const open = (api: Api) => serve(() => startDashboard(api));

  it('revalidates the list through the cache and leaves an unchanged list as it is', async () => {
    let operations = [operation('op-1')];
    const live = await open((url) =>
      url.pathname === '/v1/operations' ? { json: { operations, next_before: null } } : undefined,
    );
    const row = view.page.locator('tr[data-id="op-1"]');
    await row.waitFor();
    await row.evaluate((node: any) => (node.dataset.mark = 'drawn once'));
    await expect.poll(() => live.of('/v1/operations').length, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    const later = live.of('/v1/operations').slice(1);
    expect(later.every((seen) => seen.ifNoneMatch?.startsWith('W/"') && seen.status === 304)).toBe(true);
    expect(await row.getAttribute('data-mark')).toBe('drawn once');
    operations = [operation('op-2'), operation('op-1')];
    await view.page.locator('tr[data-id="op-2"]').waitFor({ timeout: 10_000 });
    expect(view.watch.problems).toEqual([]);
  });

  it('asks nothing while the tab is hidden, and asks at once when it is shown again', async () => {
    const live = await open((url) =>
      url.pathname === '/v1/operations'
        ? { json: { operations: [operation('op-1')], next_before: null } }
        : undefined,
    );
    await view.page.locator('tr[data-id="op-1"]').waitFor();
    await expectRestWhileHidden(view.page, live, '/v1/operations', 4500);
  });

  it('asks circuits only for receivers with callbacks waiting, seldom, and survives one failing', async () => {
    view.watch.ignore.push(/status of 500/);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    const operations = [
      ...Array.from({ length: 10 }, (_, i) =>
        operation(`ok-${i}`, {
          state: 'succeeded',
          webhook_url: `http://127.0.0.1:${1000 + i}/hook`,
          callback: { state: 'delivered', next_attempt_at: null, attempts: [] },
        }),
      ),
      ...Array.from({ length: 20 }, (_, i) =>
        operation(`wait-${i}`, {
          webhook_url: `http://127.0.0.1:${2000 + i}/hook`,
          callback: { state: i % 2 ? 'retrying' : 'dead', next_attempt_at: null, attempts: [] },
        }),
      ),
    ];
    const live = await open((url) => {
      if (url.pathname === '/v1/operations') return { json: { operations, next_before: null } };
      if (url.pathname.startsWith('/v1/operations/')) return { body: Buffer.from('x'), type: 'image/jpeg' };
      const key = decodeURIComponent(url.pathname.slice('/v1/endpoints/'.length));
      if (key === '127.0.0.1:2000')
        return { status: 500, json: { error: { code: 'internal', message: 'x' } } };
      const open = key === '127.0.0.1:2001';
      return {
        json: {
          key,
          circuit_state: open ? 'open' : 'closed',
          consecutive_failures: 5,
          open_until: open ? tomorrow : null,
        },
      };
    });
    const row = view.page.locator('tr[data-id="wait-1"]');
    await expect
      .poll(() => row.locator('.circuit').textContent(), { timeout: 10_000 })
      .toBe(`circuit open until ${tomorrow.slice(0, 10)} ${tomorrow.slice(11, 19)} UTC`);
    await view.page.waitForTimeout(5000);
    const asked = live.of(/^\/v1\/endpoints\//).map((seen) => decodeURIComponent(seen.path.split('/')[3]!));
    expect(new Set(asked)).toEqual(new Set(Array.from({ length: 20 }, (_, i) => `127.0.0.1:${2000 + i}`)));
    expect(asked.length).toBe(20); // each once: none again within ten seconds
    expect(await view.page.locator('#problem').textContent()).toBe('');
    expect(await view.page.locator('#operations tr').count()).toBe(30);
    expect(view.watch.problems).toEqual([]);
  });

  it('stops asking after a refused key until one is entered, and forgets a stored key', async () => {
    view.watch.ignore.push(/status of 401/);
    const live = await open((url, req) => {
      if (url.pathname !== '/v1/operations') return undefined;
      if (req.headers.authorization !== 'Bearer good-key') {
        return { status: 401, json: { error: { code: 'unauthorized', message: 'an API key is needed' } } };
      }
      return { json: { operations: [operation('op-1')], next_before: null } };
    });
    const problem = view.page.locator('#problem');
    await expect.poll(() => problem.textContent()).toContain('needs an API key');
    await view.page.waitForTimeout(4500);
    expect(live.of('/v1/operations').length).toBe(1);
    const key = view.page.locator('input[name="key"]');
    await key.fill('wrong-key');
    await key.dispatchEvent('change');
    await expect.poll(() => problem.textContent()).toContain('API key was refused');
    await view.page.waitForTimeout(4500);
    expect(live.of('/v1/operations').length).toBe(2);
    await key.fill('good-key');
    await key.dispatchEvent('change');
    await view.page.locator('tr[data-id="op-1"]').waitFor();
    expect(await problem.textContent()).toBe('');
    expect(await view.page.evaluate(() => (globalThis as any).localStorage.getItem('mediahook-key'))).toBe(
      'good-key',
    );
    // Polling again; and a stored key stays changeable after a reload.
    const polled = live.of('/v1/operations').length;
    await expect.poll(() => live.of('/v1/operations').length, { timeout: 5000 }).toBeGreaterThan(polled);
    await view.page.reload();
    await view.page.locator('tr[data-id="op-1"]').waitFor();
    expect(await key.isVisible()).toBe(true);
    await view.page.getByRole('button', { name: 'Forget key' }).click();
    await expect.poll(() => problem.textContent()).toContain('needs an API key');
    expect(await key.inputValue()).toBe('');
    expect(
      await view.page.evaluate(() => (globalThis as any).localStorage.getItem('mediahook-key')),
    ).toBeNull();
    expect(await view.page.locator('#operations tr').count()).toBe(0);
    await screenshot(view.page, 'dashboard-forgot-key');
  });
});
