/**
 * The inspector's Replay button in real Chromium, on a real `listen --forward-to` server: the
 * app's answer shows beside each forwarded callback, and Replay sends the kept request to the
 * app again, byte-exact. A page of another site (http://localhost:A against the server on
 * http://127.0.0.1:B) cannot have it replayed, by fetch or by form.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { createListenServer, type ListenServer } from '../../src/web/listen-server.ts';
import { type App, jpegCallback, sendCallback, startApp } from '../cli/forward-helpers.ts';
import { pagePerTest, screenshot, skipBrowserTests } from './browser.ts';
import { listen } from './listen-harness.ts';

/** Run in the page: a no-cors POST, and a form posted to the same address. */
async function crossSitePosts(target: string): Promise<void> {
  await fetch(target, { method: 'POST', mode: 'no-cors' });
  const doc = (globalThis as any).document;
  const form = doc.createElement('form');
  form.method = 'POST';
  form.action = target;
  doc.body.append(form);
  form.submit();
}

describe.skipIf(skipBrowserTests)("the inspector's Replay button", () => {
  const view = pagePerTest();
  let out: string;
  let app: App;
  let receiver: ListenServer;
  let url: string;

  beforeEach(async () => {
    out = await mkdtemp(join(tmpdir(), 'mediahook-inspector-replay-'));
    app = await startApp();
    receiver = createListenServer({
      out,
      keep: { maxRequests: 10, maxBytes: 2 ** 30 },
      forwardTo: { url: new URL(app.url), secrets: [], timeoutMs: 10_000 },
    });
    url = await listen(receiver.server);
  });
  afterEach(async () => {
    await receiver.close();
    await app.close();
    await rm(out, { recursive: true, force: true });
  });

  it("shows the app's answer and sends the kept request again", async () => {
    const sent = await sendCallback(`${url}/hook`, jpegCallback('op-1'));
    expect(sent.status).toBe(200);
    await view.page.goto(`${url}/`);
    const row = view.page.locator('#requests tbody tr').first();
    await expect.poll(() => row.textContent()).toContain('HTTP 200');
    await row.getByRole('button', { name: 'Replay' }).click();
    await expect.poll(() => row.locator('.replayed').textContent()).toMatch(/app answered 200/);
    expect(app.requests).toHaveLength(2);
    expect(app.requests[1]!.sha256).toBe(sent.sha256);
    expect(app.requests[1]!.headers['content-type']).toBe(sent.headers['content-type']);
    await screenshot(view.page, 'inspector-replay');
    expect(view.watch.problems).toEqual([]);
  });

  it('cannot be pressed by a page of another site', async () => {
    await sendCallback(`${url}/hook`, jpegCallback('op-2'));
    const [kept] = await receiver.kept!.list();
    const attacker = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>a page of another site</title>');
    });
    const port = Number(new URL(await listen(attacker)).port);
    onTestFinished(() => void attacker.close());
    await view.page.goto(`http://localhost:${port}/`);
    const target = `${url}/.mediahook/replay/${kept!.id}`;
    await Promise.all([view.page.waitForURL(target), view.page.evaluate(crossSitePosts, target)]);
    expect(await view.page.textContent('body')).toContain('cross_site_request');
    expect(app.requests).toHaveLength(1);
  });
});
