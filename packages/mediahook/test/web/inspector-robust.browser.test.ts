/**
 * The receiver inspector under strain, in a real browser: its Content-Security-Policy, the
 * receiver gone, hostile and long texts, a narrow screen, and media kept across refreshes.
 * `/requests.json` is faked where a real request cannot carry what a test needs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Receiving, startReceiving } from './listen-harness.ts';
import { inspectedRequest as request } from './inspector-fixture.ts';
import { expectHostileShownSafely, HOSTILE, pagePerTest, skipBrowserTests } from './browser.ts';

async function fakeRequests(page: Page, answer: () => unknown[]): Promise<void> {
  await page.route('**/requests.json', (route) => route.fulfill({ json: answer() }));
}

describe.skipIf(skipBrowserTests)('the receiver inspector under strain', () => {
  const view = pagePerTest();
  let receiving: Receiving;
  let out: string;

  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'mediahook-inspector-robust-'));
    receiving = await startReceiving(out);
  }, 60_000);

  afterAll(async () => {
    await receiving?.listen.close();
    await rm(out, { recursive: true, force: true });
  });

  it('runs under a CSP that admits only its own script and style, loading nothing from elsewhere', async () => {
    const elsewhere: string[] = [];
    view.page.on('request', (sent) => {
      if (!sent.url().startsWith(receiving.url)) elsewhere.push(sent.url());
    });
    await fakeRequests(view.page, () => [request('csp-1')]);
    const response = await view.page.goto(receiving.url);
    const policy = response?.headers()['content-security-policy'] ?? '';
    expect(policy).toContain("default-src 'none'");
    expect(policy).toMatch(/script-src 'sha256-[^']+'(;|$)/);
    await view.page.locator('#requests tbody tr').waitFor({ timeout: 10_000 });
    expect(elsewhere).toEqual([]);
    expect(view.watch.problems).toEqual([]);
  });

  it('says when the receiver cannot be reached, and recovers', async () => {
    view.watch.ignore.push(/ERR_CONNECTION_REFUSED|ERR_FAILED/);
    await view.page.goto(receiving.url);
    const problem = view.page.locator('#problem');
    await view.page.route('**/requests.json', (route) => route.abort('connectionrefused'));
    await expect.poll(() => problem.textContent(), { timeout: 10_000 }).toContain('cannot be reached');
    await view.page.unroute('**/requests.json');
    await expect.poll(() => problem.textContent(), { timeout: 10_000 }).toBe('');
    expect(view.watch.problems).toEqual([]);
  });

  it('shows hostile and long texts as text, a field a line, within the screen, wide or narrow', async () => {
    const long = 'z'.repeat(2000);
    const hostile = request(`${HOSTILE}${long}`, {
      headers: { 'content-type': HOSTILE, 'user-agent': `\u202E${long}` },
    });
    const rejected = request('unused', {
      verdict: 'rejected',
      error: { code: HOSTILE, message: `${HOSTILE} ${long}` },
      callback: null,
    });
    const callback = hostile.callback as Record<string, unknown>;
    Object.assign(callback, { status: HOSTILE, message: `\u202Eright-to-left ${HOSTILE} ${long}` });
    await fakeRequests(view.page, () => [hostile, rejected]);
    await view.page.goto(receiving.url);
    const rows = view.page.locator('#requests tbody tr');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(2);
    expect(await rows.nth(0).textContent()).toContain(`status=${HOSTILE}`);
    expect(await rows.nth(0).locator('td').nth(3).locator('div').count()).toBe(3);
    expect(await view.page.locator('#requests img, #requests script').count()).toBe(0);
    await expectHostileShownSafely(view, 'inspector-narrow-hostile');
  });

  it('keeps a shown image or video element when another callback arrives', async () => {
    // The file does not exist: only the element's identity matters here.
    view.watch.ignore.push(/status of 404/);
    const file = {
      url: '/files/kept.jpg',
      path: null,
      filename: 'kept.jpg',
      declaredType: 'image/jpeg',
      mediaType: 'image/jpeg',
      bytes: 10,
      sha256: null,
    };
    const first = request('kept', {});
    Object.assign(first.callback as Record<string, unknown>, { event: 'success', file, message: null });
    let requests = [first];
    await fakeRequests(view.page, () => requests);
    await view.page.goto(receiving.url);
    const image = view.page.locator('#requests img');
    await image.waitFor({ timeout: 10_000 });
    await image.evaluate(
      (node) => ((node as unknown as { dataset: Record<string, string> }).dataset.mark = 'first'),
    );
    requests = [request('newer'), first];
    await expect.poll(() => view.page.locator('#requests tbody tr').count(), { timeout: 10_000 }).toBe(2);
    expect(await image.getAttribute('data-mark')).toBe('first');
    expect(view.watch.problems).toEqual([]);
  });
});
