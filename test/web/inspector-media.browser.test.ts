/**
 * The receiver inspector of `mediahook listen` in a real browser: every request appears with
 * its verdict, fields and headers, the image shows and the video plays.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCallback, type OutgoingCallback } from '../../packages/mediahook/src/protocol/index.ts';
import { renderPromptImage, renderPromptVideo } from '../../packages/server/src/service/generators/index.ts';
import { type Receiving, startReceiving } from '../../packages/mediahook/test/web/listen-harness.ts';
import {
  type ImageLike,
  launchChromium,
  screenshot,
  skipBrowserTests,
  type VideoLike,
} from '../../packages/mediahook/test/web/browser.ts';

async function post(url: string, callback: OutgoingCallback): Promise<number> {
  const encoded = await encodeCallback(callback);
  const chunks: Buffer[] = [];
  for await (const chunk of encoded.body()) chunks.push(chunk);
  const response = await request(url, {
    method: 'POST',
    headers: { 'content-type': encoded.contentType },
    body: Buffer.concat(chunks),
  });
  await response.body.dump();
  return response.statusCode;
}

describe.skipIf(skipBrowserTests)('the receiver inspector', () => {
  let browser: Browser;
  let page: Page;
  let receiving: Receiving;
  let out: string;
  let media: string;

  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'mediahook-inspector-'));
    media = await mkdtemp(join(tmpdir(), 'mediahook-inspector-media-'));
    receiving = await startReceiving(out);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await receiving?.listen.close();
    await rm(out, { recursive: true, force: true });
    await rm(media, { recursive: true, force: true });
  });

  it('lists accepted, duplicate and rejected requests, live, with the media', async () => {
    await page.goto(receiving.url);
    expect(await page.locator('#empty').isVisible()).toBe(true);
    const time_gen = new Date().toISOString();
    const image = await renderPromptImage(
      { id_gen: 'img-1', kind: 'image', family: 'A', prompt: 'inspector' },
      { workDir: media },
    );
    const video = await renderPromptVideo(
      { id_gen: 'vid-1', kind: 'video', family: 'A', prompt: 'inspector' },
      { workDir: media },
    );
    const imageCallback: OutgoingCallback = {
      family: 'A',
      event: 'success',
      status: 'success',
      id_gen: 'img-1',
      time_gen,
      file: image.path,
      mediaType: 'image/jpeg',
    };
    expect(await post(`${receiving.url}/hook`, imageCallback)).toBe(200);
    expect(
      await post(`${receiving.url}/hook`, {
        family: 'A',
        event: 'success',
        status: 'success',
        id_gen: 'vid-1',
        time_gen,
        file: video.path,
        mediaType: 'video/mp4',
      }),
    ).toBe(200);
    expect(await post(`${receiving.url}/hook`, imageCallback)).toBe(200);
    const rejected = await request(`${receiving.url}/hook`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'hello',
    });
    await rejected.body.dump();
    expect(rejected.statusCode).toBe(500);

    const rows = page.locator('#requests tbody tr');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(4);
    expect(
      await rows.evaluateAll((list) =>
        list.map((row) => (row as unknown as { dataset: Record<string, string> }).dataset.verdict),
      ),
    ).toEqual(['rejected', 'duplicate', 'accepted', 'accepted']);
    expect(await rows.nth(0).textContent()).toContain('not_multipart');
    expect(await rows.nth(3).textContent()).toContain('id_gen=img-1');
    expect(await rows.nth(3).textContent()).toContain('content-type: multipart/form-data');
    await expect
      .poll(() =>
        rows
          .nth(3)
          .locator('img')
          .evaluate(
            (img) => (img as unknown as ImageLike).complete && (img as unknown as ImageLike).naturalWidth,
          ),
      )
      .toBe(640);
    const played = await rows
      .nth(2)
      .locator('video')
      .evaluate(async (node) => {
        const element = node as unknown as VideoLike;
        await element.play();
        await new Promise((resolve) => setTimeout(resolve, 500));
        return { time: element.currentTime, error: element.error?.code ?? null };
      });
    expect(played.error).toBeNull();
    expect(played.time).toBeGreaterThan(0);
    await screenshot(page, 'inspector');
  });
});
