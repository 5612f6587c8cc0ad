/**
 * A page of another site, in real Chromium, trying what the service and `listen` must refuse: a
 * form it posts to `listen` (and the same as a no-cors fetch) is not stored, and a no-cors
 * `fetch(…/redeliver)` puts no `gone` callback back; the same page on an allowed origin succeeds,
 * so the refusal is what stops it. A rebinding name reaches neither server. The attacker's page
 * is on http://localhost:A, the servers on http://127.0.0.1:B: two origins, two sites.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { ReceiverOutcome } from '../../packages/mediahook/src/receiver/index.ts';
import { createListenServer } from '../../packages/mediahook/src/web/listen-server.ts';
import {
  type Receiver as PlainReceiver,
  startReceiver as startPlainReceiver,
} from '../../packages/mediahook/test/cli/helpers.ts';
import {
  listen,
  type RunningService,
  startService,
  waitForCallback,
} from '../../packages/server/test/service/service-harness.ts';
import { launchChromium, skipBrowserTests } from '../../packages/mediahook/test/web/browser.ts';

/** The attacker's site: an empty page, on localhost, where the tests run their scripts. */
async function startAttackerSite(): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>a page of another site</title>');
  });
  const port = Number(new URL(await listen(server)).port);
  return { url: `http://localhost:${port}`, server };
}

/** Run in the page: posts an error callback as an HTML form, which navigates to the answer. */
function postForm(target: string): void {
  const doc = (globalThis as any).document;
  const form = doc.createElement('form');
  form.method = 'POST';
  form.enctype = 'multipart/form-data';
  form.action = target;
  const fields = {
    status: 'error',
    id_gen: 'forged-by-a-page',
    time_gen: '2026-01-01T00:00:00Z',
    message: 'x',
  };
  for (const [name, value] of Object.entries(fields)) {
    const input = doc.createElement('input');
    input.name = name;
    input.value = value;
    form.append(input);
  }
  doc.body.append(form);
  form.submit();
}

/** Run in the page: the same callback as a no-cors fetch, whose answer the page cannot read. */
async function fetchForm(target: string): Promise<void> {
  const body = new (globalThis as any).FormData();
  body.append('status', 'error');
  body.append('id_gen', 'forged-by-fetch');
  body.append('time_gen', '2026-01-01T00:00:00Z');
  body.append('message', 'x');
  await fetch(target, { method: 'POST', mode: 'no-cors', body });
}

describe.skipIf(skipBrowserTests)('a page of another site', () => {
  let browser: Browser;
  let page: Page;
  let attacker: { url: string; server: Server };
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mediahook-cross-site-'));
    attacker = await startAttackerSite();
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    attacker?.server.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function freshPage(): Promise<Page> {
    const context = await browser.newContext();
    onTestFinished(() => context.close());
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(attacker.url);
    return page;
  }

  /** A `listen` server in-process, as the CLI makes it; its outcomes and stored names. */
  async function startListen(name: string, allowedOrigins: string[] = []) {
    const out = join(dir, name);
    const outcomes: ReceiverOutcome[] = [];
    const server = createListenServer({ out, allowedOrigins, onOutcome: (o) => outcomes.push(o) });
    const url = await listen(server.server);
    onTestFinished(() => server.close());
    const stored = async () => (await readdir(out)).filter((entry) => !entry.startsWith('receipts'));
    return { url, outcomes, stored, receiver: server.receiver };
  }

  it('cannot have listen store a callback it posts as a form or a no-cors fetch', async () => {
    const target = await startListen('refused');
    await freshPage();
    await Promise.all([page.waitForURL(`${target.url}/hook`), page.evaluate(postForm, `${target.url}/hook`)]);
    expect(await page.textContent('body')).toContain('cross_origin_request');
    await page.goto(attacker.url);
    await page.evaluate(fetchForm, `${target.url}/hook`);
    await expect.poll(() => target.outcomes.length).toBe(2);
    expect(target.outcomes.map((o) => [o.verdict, o.error?.code])).toEqual([
      ['rejected', 'cross_origin_request'],
      ['rejected', 'cross_origin_request'],
    ]);
    expect(await target.stored()).toEqual([]);
    expect(await target.receiver.store.get('forged-by-a-page')).toBeUndefined();
  });

  it('has listen store it when listen allows its origin: the refusal is what stops it', async () => {
    const target = await startListen('allowed', [attacker.url]);
    await freshPage();
    await Promise.all([page.waitForURL(`${target.url}/hook`), page.evaluate(postForm, `${target.url}/hook`)]);
    expect(await page.textContent('body')).toContain('"received":true');
    expect(target.outcomes.map((o) => o.verdict)).toEqual(['accepted']);
    expect(await target.receiver.store.get('forged-by-a-page')).toBeDefined();
  });

  describe('against the service', () => {
    let gone: PlainReceiver;
    beforeAll(async () => {
      gone = await startPlainReceiver();
      gone.answer = { status: 410, body: 'gone for good' };
    });
    afterAll(() => gone?.close());

    /** A service whose one operation's callback the receiver answered 410: `gone`. */
    async function serviceWithGoneCallback(allowedOrigins: string[] = []) {
      const events: string[] = [];
      const run: RunningService = await startService({
        allowedOrigins,
        log: (_level, event) => events.push(event),
      });
      onTestFinished(() => run.stop());
      const created = await run.post('/v1/operations', {
        kind: 'image',
        family: 'A',
        prompt: 'gone',
        webhook_url: gone.url,
      });
      const id = created.body.id_gen as string;
      const before = await waitForCallback(run, id, ['gone']);
      return { run, id, before, events };
    }

    /** Run in the page: the no-cors POST a page of any site may send. */
    async function redeliver(target: string): Promise<void> {
      await fetch(target, { method: 'POST', mode: 'no-cors' });
    }

    it('cannot put a gone callback back with a no-cors fetch to …/redeliver', async () => {
      const { run, id, before, events } = await serviceWithGoneCallback();
      await freshPage();
      await page.evaluate(redeliver, `${run.url}/v1/operations/${id}/redeliver`);
      await page.waitForTimeout(1000);
      const after = await run.store.getOperation('default', id);
      expect(after?.callback.state).toBe('gone');
      expect(after?.callback.attempts).toHaveLength(before.callback.attempts.length);
      expect(events).not.toContain('callback_redelivered');
    });

    it('puts it back when the service allows its origin: the refusal is what stops it', async () => {
      const { run, id, before, events } = await serviceWithGoneCallback([attacker.url]);
      await freshPage();
      await page.evaluate(redeliver, `${run.url}/v1/operations/${id}/redeliver`);
      await expect.poll(() => events.includes('callback_redelivered')).toBe(true);
      const after = await waitForCallback(run, id, ['gone']);
      expect(after.callback.attempts.length).toBeGreaterThan(before.callback.attempts.length);
    });
  });
});

describe.skipIf(skipBrowserTests)('a page on a rebinding name', () => {
  it('reaches neither the service nor listen: both answer 421', async () => {
    const run = await startService({ workers: false });
    onTestFinished(() => run.stop());
    const out = await mkdtemp(join(tmpdir(), 'mediahook-rebinding-'));
    const receiver = createListenServer({ out, onHostRefused: () => {} });
    const receiverUrl = await listen(receiver.server);
    onTestFinished(async () => {
      await receiver.close();
      await rm(out, { recursive: true, force: true });
    });
    // The name resolves to this machine, as the attacker's DNS answers once the page is loaded.
    const browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--host-resolver-rules=MAP rebind.test 127.0.0.1',
      ],
    });
    onTestFinished(() => browser.close());
    const page = await browser.newPage();
    for (const base of [run.url, receiverUrl]) {
      const port = (server: string) => new URL(server).port;
      for (const path of ['/', '/v1/operations', '/requests.json']) {
        const response = await page.goto(`http://rebind.test:${port(base)}${path}`);
        expect(response?.status(), `${base}${path}`).toBe(421);
        expect(await page.textContent('body')).toContain('host_not_allowed');
      }
    }
  });
});
