/**
 * The dashboard of a service with an API key, in a real browser: once the key is entered, the
 * result previews load too (an <img src> cannot carry the Bearer header the API asks for); a
 * wrong key is told apart from none.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ImageLike,
  launchChromium,
  skipBrowserTests,
  type VideoLike,
} from '../../../mediahook/test/web/browser.ts';
import {
  addAdminKey,
  type RunningService,
  SECRET,
  startService,
  startTempReceiving,
  type TempReceiving,
  waitForCallback,
} from './service-harness.ts';

const KEY = 'mh_dashboard-key-0123456789';

describe.skipIf(skipBrowserTests)('the dashboard with an API key', () => {
  let browser: Browser;
  let page: Page;
  let run: RunningService;
  let receiving: TempReceiving;

  beforeAll(async () => {
    receiving = await startTempReceiving(SECRET);
    run = await startService();
    await addAdminKey(run.store, KEY);
    browser = await launchChromium();
    page = await browser.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await run?.stop();
    await receiving?.close();
  });

  it('asks for the key, then shows the rows with their image and video', async () => {
    const ids: string[] = [];
    for (const kind of ['image', 'video']) {
      const created = await run.post(
        '/v1/operations',
        { kind, family: 'A', prompt: `keyed ${kind}`, webhook_url: `${receiving.url}/hook` },
        { authorization: `Bearer ${KEY}` },
      );
      ids.push(created.body.id_gen as string);
    }
    for (const id of ids) await waitForCallback(run, id, ['delivered']);
    await page.goto(run.url);
    const key = page.locator('input[name="key"]');
    await key.waitFor({ state: 'visible', timeout: 10_000 });
    expect(await page.locator('#problem').textContent()).toContain('needs an API key');
    await key.fill('mh_not-a-key');
    await key.dispatchEvent('change');
    await expect
      .poll(() => page.locator('#problem').textContent(), { timeout: 10_000 })
      .toContain('API key was refused');
    await key.fill(KEY);
    await key.dispatchEvent('change');
    const image = page.locator(`tr[data-id="${ids[0]}"] img`);
    await expect
      .poll(
        () =>
          image.evaluate(
            (node) => (node as unknown as ImageLike).complete && (node as unknown as ImageLike).naturalWidth,
          ),
        { timeout: 10_000 },
      )
      .toBe(640);
    const video = page.locator(`tr[data-id="${ids[1]}"] video`);
    await expect
      .poll(() => video.evaluate((node) => (node as unknown as VideoLike).videoWidth), { timeout: 10_000 })
      .toBe(640);
  });
});
