/**
 * The service dashboard in a real browser: operations appear and get delivered, a failing
 * receiver's attempts grow, redeliver works, the image shows and the video plays.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  listen,
  type Receiving,
  type RunningService,
  SECRET,
  startReceiving,
  startService,
  waitForCallback,
} from '../service/service-harness.ts';
import {
  type ImageLike,
  launchChromium,
  screenshot,
  skipBrowserTests,
  type VideoLike,
} from '../../../mediahook/test/web/browser.ts';

describe.skipIf(skipBrowserTests)('the service dashboard', () => {
  let browser: Browser;
  let page: Page;
  let run: RunningService;
  let receiving: Receiving;
  let failing: Server;
  let failingUrl: string;
  let out: string;

  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'mediahook-dashboard-'));
    receiving = await startReceiving(out, SECRET);
    failing = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(503, { 'content-type': 'text/plain' });
        res.end('busy');
      });
    });
    failingUrl = `${await listen(failing)}/hook`;
    run = await startService();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await run?.stop();
    await receiving?.listen.close();
    failing?.close();
    await rm(out, { recursive: true, force: true });
  });

  it('shows operations being delivered, with the image and a playing video', async () => {
    const image = await run.post('/v1/operations', {
      kind: 'image',
      family: 'A',
      prompt: 'dashboard image',
      webhook_url: `${receiving.url}/hook`,
    });
    const video = await run.post('/v1/operations', {
      kind: 'video',
      family: 'A',
      prompt: 'dashboard video',
      webhook_url: `${receiving.url}/hook`,
    });
    await page.goto(run.url);
    const imageRow = page.locator(`tr[data-id="${image.body.id_gen}"]`);
    const videoRow = page.locator(`tr[data-id="${video.body.id_gen}"]`);
    await imageRow.locator('.callback-state.delivered').waitFor({ timeout: 30_000 });
    await videoRow.locator('.callback-state.delivered').waitFor({ timeout: 30_000 });
    await expect
      .poll(
        () =>
          imageRow
            .locator('img')
            .evaluate(
              (img) => (img as unknown as ImageLike).complete && (img as unknown as ImageLike).naturalWidth,
            ),
        {
          timeout: 10_000,
        },
      )
      .toBe(640);
    const played = await videoRow.locator('video').evaluate(async (node) => {
      const element = node as unknown as VideoLike;
      await element.play();
      await new Promise((resolve) => setTimeout(resolve, 500));
      return { time: element.currentTime, width: element.videoWidth, error: element.error?.code ?? null };
    });
    expect(played.error).toBeNull();
    expect(played.width).toBe(640);
    expect(played.time).toBeGreaterThan(0);
    await screenshot(page, 'dashboard-delivered');
  });

  it('plays a handed-in MP4 (kind external) as a video', async () => {
    const made = await run.post('/v1/operations', {
      kind: 'video',
      family: 'A',
      prompt: 'to hand in',
      webhook_url: `${receiving.url}/hook`,
    });
    await waitForCallback(run, made.body.id_gen as string, ['delivered']);
    const mp4 = await (await fetch(`${run.url}/v1/operations/${made.body.id_gen}/result`)).arrayBuffer();
    const form = new FormData();
    form.set('webhook_url', `${receiving.url}/hook`);
    form.set('family', 'A');
    form.set('id_gen', 'handed-in-mp4');
    form.set('result', new Blob([mp4]), 'render.mp4');
    expect((await fetch(`${run.url}/v1/callbacks`, { method: 'POST', body: form })).status).toBe(202);
    await page.goto(run.url);
    const row = page.locator('tr[data-id="handed-in-mp4"]');
    await row.locator('.callback-state.delivered').waitFor({ timeout: 30_000 });
    await expect.poll(() => row.locator('video').count(), { timeout: 10_000 }).toBe(1);
    const width = await row.locator('video').evaluate(
      (node) =>
        new Promise<number>((resolve) => {
          const element = node as unknown as VideoLike & { readyState: number; onloadedmetadata: unknown };
          if (element.readyState > 0) resolve(element.videoWidth);
          else element.onloadedmetadata = () => resolve(element.videoWidth);
        }),
    );
    expect(width).toBe(640);
    expect(await row.locator('img').count()).toBe(0);
  });

  it("shows a failing receiver's attempts grow, then redelivers on a click", async () => {
    const created = await run.post('/v1/operations', {
      kind: 'image',
      family: 'B',
      prompt: 'nobody home',
      fail_with: 'demo failure',
      webhook_url: failingUrl,
    });
    const row = page.locator(`tr[data-id="${created.body.id_gen}"]`);
    await page.reload();
    await expect
      .poll(() => row.locator('.attempts li').count(), { timeout: 30_000 })
      .toBeGreaterThanOrEqual(2);
    expect(await row.locator('.attempts li').first().textContent()).toContain('503');
    await screenshot(page, 'dashboard-failing');
    await waitForCallback(run, created.body.id_gen, ['dead'], 30_000);
    await row.locator('.callback-state.dead').waitFor({ timeout: 10_000 });
    const before = await row.locator('.attempts li').count();
    await row.getByRole('button', { name: 'Redeliver' }).click();
    await expect.poll(() => row.locator('.attempts li').count(), { timeout: 20_000 }).toBeGreaterThan(before);
    await expect.poll(() => page.locator('#message').textContent()).toContain('Redelivery queued');
  });

  it('filters by callback state and family', async () => {
    await page.selectOption('select[name="callback_state"]', 'delivered');
    // Some rows, all delivered: an empty list would pass `every` without showing anything.
    await expect
      .poll(
        async () => {
          const states = await page.locator('#operations .callback-state').allTextContents();
          return states.length > 0 && states.every((s) => s === 'delivered');
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    await page.selectOption('select[name="callback_state"]', '');
    await page.selectOption('select[name="family"]', 'B');
    await expect
      .poll(async () => {
        const rows = await page.locator('#operations tr').allTextContents();
        return rows.length > 0 && rows.every((text) => text.includes('family B'));
      })
      .toBe(true);
    await screenshot(page, 'dashboard-filtered');
  });
});
