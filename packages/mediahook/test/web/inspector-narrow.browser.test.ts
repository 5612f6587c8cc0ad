/**
 * `listen`'s inspector on a phone (390 px wide), over a real receiver: each request's verdict,
 * callback and link to its stored file lie within the screen, with no sideways scrolling.
 */
import { describe, expect, it } from 'vitest';
import { post } from '../cli/listen-helpers.ts';
import { jpegBytes } from '../receiver/helpers.ts';
import { overflowsSideways, pagePerTest, rowsWithin, screenshot, skipBrowserTests } from './browser.ts';
import { startTempReceiving } from './listen-harness.ts';

describe.skipIf(skipBrowserTests)("listen's inspector on a narrow screen", () => {
  const view = pagePerTest();

  it("shows each request's verdict, callback and file link within 390 px", async () => {
    const receiving = await startTempReceiving();
    try {
      const time_gen = new Date().toISOString();
      const long = 'a-long-id-'.repeat(24);
      const image = await post(receiving.url, {
        family: 'A',
        event: 'success',
        status: 'success',
        id_gen: 'phone-image',
        time_gen,
        file: jpegBytes(),
        mediaType: 'image/jpeg',
      });
      expect(image.status).toBe(200);
      const failed = await post(receiving.url, {
        family: 'B',
        event: 'error',
        status: 'error',
        id_gen: long,
        time_gen,
        message: `the generator failed: ${'x'.repeat(400)}`,
      });
      expect(failed.status).toBe(200);
      const refused = await fetch(receiving.url, { method: 'POST', body: 'not a callback' });
      expect(refused.status).toBe(500);
      await refused.arrayBuffer();

      await view.page.setViewportSize({ width: 390, height: 844 });
      await view.page.goto(receiving.url);
      const rows = view.page.locator('#requests tbody tr');
      await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(3);
      const measured = await rowsWithin(
        view.page,
        '#requests tbody tr',
        ['td:nth-child(2)', 'td:nth-child(3)'],
        ['a.stored', 'button'],
      );
      expect(measured).toEqual({ rows: 3, outside: [] });
      // The link is there to be measured, and each value is under its column's name.
      expect(await view.page.locator('#requests a.stored').count()).toBe(1);
      expect(await rows.first().locator('td').nth(1).getAttribute('data-label')).toBe('verdict');
      expect(await overflowsSideways(view.page)).toBe(false);
      await screenshot(view.page, 'inspector-phone');
    } finally {
      await receiving.close();
    }
  });
});
