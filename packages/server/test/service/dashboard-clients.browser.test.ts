/**
 * The dashboard's clients in a real browser: an admin key lists, makes and revokes keys and
 * filters by client; a client key sees its own operations and its signing secret, shown only
 * when asked.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/service/clients/api-keys.ts';
import { launchChromium, skipBrowserTests, watchProblems } from '../../../mediahook/test/web/browser.ts';
import { type RunningService, startService } from './service-harness.ts';

// The service runs no workers: nothing is dialled, the operations only have to exist.
const HOOK = 'http://127.0.0.1:9/hook';

describe.skipIf(skipBrowserTests)('the dashboard with clients', () => {
  let browser: Browser;
  let page: Page;
  let run: RunningService;
  let adminKey: string;
  let acmeKey: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    run = await startService({ workers: false });
    adminKey = (await createApiKey(run.store, { client: 'default', role: 'admin' })).created.key;
    acmeKey = (await createApiKey(run.store, { client: 'acme', role: 'client' })).created.key;
    const zetaKey = (await createApiKey(run.store, { client: 'zeta', role: 'client' })).created.key;
    for (const [client, key] of [
      ['acme', acmeKey],
      ['zeta', zetaKey],
    ] as const) {
      const body = { kind: 'image', family: 'A', prompt: client, webhook_url: HOOK };
      ids[client] = (await run.post('/v1/operations', body, { authorization: `Bearer ${key}` })).body.id_gen;
    }
    browser = await launchChromium();
    page = await browser.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await run?.stop();
  });

  async function useKey(key: string): Promise<void> {
    await page.goto(run.url);
    const field = page.locator('input[name="key"]');
    await field.waitFor({ state: 'visible', timeout: 10_000 });
    await field.fill(key);
    await field.dispatchEvent('change');
  }

  it('lets an admin key make and revoke keys, and filter by client', async () => {
    const watch = watchProblems(page);
    // The page asks for a key first.
    watch.ignore.push(/status of 401/);
    await useKey(adminKey);
    await page.locator(`tr[data-id="${ids['zeta']}"]`).waitFor({ timeout: 10_000 });
    await page.click('#keys-toggle');
    await expect.poll(() => page.locator('#keys tr').count(), { timeout: 10_000 }).toBe(3);
    await page.fill('#new-key input[name="client"]', 'newco');
    await page.click('#new-key button[type="submit"]');
    await expect
      .poll(() => page.locator('#new-key-shown code').textContent(), { timeout: 10_000 })
      .toMatch(/^mh_/);
    await expect.poll(() => page.locator('#keys tr').count()).toBe(4);
    await page.locator('#keys tr', { hasText: 'newco' }).getByRole('button', { name: 'Revoke' }).click();
    await expect
      .poll(() => page.locator('#keys tr', { hasText: 'newco' }).textContent())
      .toContain('revoked');

    const filter = page.locator('input[name="client"]').first();
    await filter.fill('acme');
    await filter.dispatchEvent('change');
    await page.locator(`tr[data-id="${ids['zeta']}"]`).waitFor({ state: 'detached', timeout: 10_000 });
    expect(await page.locator(`tr[data-id="${ids['acme']}"]`).textContent()).toContain('client acme');
    expect(watch.problems).toEqual([]);
  });

  it('shows a client key its own operations, and its secret once asked', async () => {
    const watch = watchProblems(page);
    watch.ignore.push(/status of 401/, /status of 403/);
    await useKey(acmeKey);
    await page.locator(`tr[data-id="${ids['acme']}"]`).waitFor({ timeout: 10_000 });
    expect(await page.locator(`tr[data-id="${ids['zeta']}"]`).count()).toBe(0);
    expect(await page.locator('#secret-shown').isVisible()).toBe(false);
    await page.click('#secret-toggle');
    const secret = (await run.get('/v1/webhooks/secret', { authorization: `Bearer ${acmeKey}` })).body.secret;
    await expect
      .poll(() => page.locator('#secret-shown code').textContent(), { timeout: 10_000 })
      .toBe(secret);
    await page.click('#secret-toggle');
    expect(await page.locator('#secret-shown').isVisible()).toBe(false);
    await page.click('#keys-toggle');
    await expect
      .poll(() => page.locator('#message').textContent(), { timeout: 10_000 })
      .toContain('admin key');
    expect(await page.locator('#keys-box').isVisible()).toBe(false);
    expect(watch.problems).toEqual([]);
  });
});
