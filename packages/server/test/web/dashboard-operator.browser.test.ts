/**
 * The operator's view in a real browser, phone-sized: a real receiver fails, the receivers panel
 * and the charts show it, it comes back and is recovered from the panel; an operation found by
 * id_gen shows its attempts in detail with a `mediahook send` line that sends it again; and
 * hostile texts from receivers are shown as text, never run.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../../../mediahook/test/cli/helpers.ts';
import {
  ARTIFACTS,
  expectHostileShownSafely,
  HOSTILE,
  overflowsSideways,
  pagePerTest,
  screenshot,
  skipBrowserTests,
} from '../../../mediahook/test/web/browser.ts';
import {
  listen,
  type RunningService,
  SECRET,
  startService,
  waitForCallback,
} from '../service/service-harness.ts';
import { operation, startDashboard } from './dashboard-fixture.ts';

const PHONE = { width: 390, height: 844 };
const DOC_IMAGES = new URL('../../docs/images/', import.meta.url);

/** Keeps a screenshot of `selector` as a test artifact, and as the docs' picture when DOC_IMAGES=1. */
async function shot(page: Page, selector: string, name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  await page.locator(selector).screenshot({ path: `${ARTIFACTS}${name}.png` });
  if (process.env.DOC_IMAGES === '1')
    await copyFile(`${ARTIFACTS}${name}.png`, new URL(`${name}.png`, DOC_IMAGES));
}

/** A receiver on 127.0.0.1 that answers 500 (with `answer`) while `failing`, else 200; it keeps the last body. */
async function switchableReceiver(answer: { body: string; headers: Record<string, string> }) {
  const receiver = { url: '', key: '', failing: true, lastBody: '', server: undefined as unknown as Server };
  receiver.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      receiver.lastBody = Buffer.concat(chunks).toString('latin1');
      if (!receiver.failing) return void res.writeHead(200).end('ok');
      res.writeHead(500, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body);
    });
  });
  const base = await listen(receiver.server);
  receiver.url = `${base}/hook`;
  receiver.key = new URL(base).host;
  return receiver;
}

describe.skipIf(skipBrowserTests)('the operator’s view in the dashboard', () => {
  const view = pagePerTest();
  let run: RunningService;
  let flaky: Awaited<ReturnType<typeof switchableReceiver>>;
  let hostile: Awaited<ReturnType<typeof switchableReceiver>>;
  let healthy: Awaited<ReturnType<typeof switchableReceiver>>;
  const dead: string[] = [];

  const create = async (url: string) => {
    const created = await run.post('/v1/operations', {
      kind: 'image',
      family: 'A',
      prompt: 'operator view',
      fail_with: "made to fail, it's a test",
      webhook_url: url,
    });
    return created.body.id_gen as string;
  };

  beforeAll(async () => {
    flaky = await switchableReceiver({
      body: '{"error":{"code":"storage_down","message":"disk full"}}',
      headers: { 'x-receiver': 'down for maintenance' },
    });
    hostile = await switchableReceiver({ body: HOSTILE, headers: { 'x-hostile': HOSTILE } });
    healthy = await switchableReceiver({ body: '', headers: {} });
    healthy.failing = false;
    run = await startService();
    // One callback dies after four attempts, short of the five that would open the circuit.
    const ids = [await create(flaky.url), await create(healthy.url)];
    dead.push(ids[0]!);
    await waitForCallback(run, ids[1]!, ['delivered']);
    for (const id of dead) await waitForCallback(run, id, ['dead']);
  }, 60_000);

  afterAll(async () => {
    await run?.stop();
    for (const receiver of [flaky, hostile, healthy]) receiver?.server.close();
  });

  it('shows a failing receiver, then recovers it from the panel once it is back', async () => {
    await view.page.setViewportSize(PHONE);
    await view.page.goto(run.url);
    const row = view.page.locator(`#receivers tr[data-key="${flaky.key}"]`);
    await expect.poll(() => row.locator('.count.dead').textContent()).toBe('dead 1');
    // Worst first: the failing receiver above the healthy one.
    expect(await view.page.locator('#receivers tr').first().getAttribute('data-key')).toBe(flaky.key);
    expect(await row.locator('.error').textContent()).toBe('HTTP 500');
    expect(await row.locator('.rate').textContent()).toBe('0 %');
    const healthyRow = view.page.locator(`#receivers tr[data-key="${healthy.key}"]`);
    expect(await healthyRow.locator('.rate').textContent()).toBe('100 %');
    // The charts, drawn in the page: failures and a delivery, and the latency lines.
    await expect.poll(() => view.page.locator('svg.counts rect.failed').count()).toBeGreaterThan(0);
    expect(await view.page.locator('svg.counts rect.delivered').count()).toBeGreaterThan(0);
    expect(await view.page.locator('svg.latency rect.p95').count()).toBeGreaterThan(0);
    expect(await view.page.locator('#charts').textContent()).toContain('1 delivered, 4 failed');
    expect(await overflowsSideways(view.page)).toBe(false);
    await screenshot(view.page, 'operator-failing-phone');
    await shot(view.page, '#receivers-panel', 'dashboard-receivers');

    flaky.failing = false;
    await row
      .getByRole('combobox', { name: `Recover the dead callbacks of ${flaky.key} since` })
      .selectOption('24h');
    await row
      .getByRole('button', { name: `Recover the dead callbacks of ${flaky.key}`, exact: true })
      .click();
    await expect.poll(() => row.locator('.outcome').textContent()).toBe('1 callback queued again');
    for (const id of dead) await waitForCallback(run, id, ['delivered']);
    await expect
      .poll(
        () => view.page.locator(`#receivers tr[data-key="${flaky.key}"] .count.delivered`).textContent(),
        {
          timeout: 15_000,
        },
      )
      .toBe('delivered 1');
    await expect
      .poll(() => view.page.locator(`tr[data-id="${dead[0]}"] .callback-state`).textContent())
      .toBe('delivered');
    await screenshot(view.page, 'operator-recovered-phone');
    expect(view.watch.problems).toEqual([]);
  });

  it('finds an operation by id_gen and shows its attempts, with a send line that sends it again', async () => {
    await view.page.setViewportSize(PHONE);
    await view.page.goto(run.url);
    const id = dead[0]!;
    await view.page.getByLabel('id_gen').fill(id);
    await view.page.getByLabel('id_gen').press('Enter');
    await expect.poll(() => view.page.locator('#operations tr').count()).toBe(1);
    await view.page.getByRole('button', { name: `Show the attempts of ${id} in detail` }).click();
    const detail = view.page.locator('#detail');
    await detail.waitFor();
    const first = detail.locator('details.attempt').first();
    expect(await first.locator('.answer').textContent()).toBe('answered HTTP 500');
    const terms = await first.locator('dt').allTextContents();
    expect(terms).toEqual(expect.arrayContaining(['webhook-signature', 'user-agent', 'x-receiver']));
    expect(await first.locator('.first-bytes').textContent()).toContain('storage_down');
    const line = (await detail.locator('code.send-line').textContent())!;
    expect(line).toBe(
      `mediahook send ${flaky.url} --family A --id ${id} --time ${(await run.store.getOperation('default', id))!.finished_at}` +
        ` --status error --message 'made to fail, it'\\''s a test' --secret "$MEDIAHOOK_SECRET"`,
    );
    expect(await overflowsSideways(view.page)).toBe(false);
    await screenshot(view.page, 'operator-detail-phone');
    await shot(view.page, '#detail', 'dashboard-attempt');
    // The line, run by a shell, sends the same callback.
    flaky.lastBody = '';
    await promisify(execFile)('sh', ['-c', line.replace(/^mediahook /, `'${BIN}' `)], {
      env: { ...process.env, MEDIAHOOK_SECRET: SECRET },
    });
    expect(flaky.lastBody).toContain(id);
    expect(flaky.lastBody).toContain("made to fail, it's a test");
    expect(view.watch.problems).toEqual([]);
  });

  it('shows what a hostile receiver answers as text, in the list and in the detail', async () => {
    const id = await create(hostile.url);
    await waitForCallback(run, id, ['dead']);
    await view.page.goto(run.url);
    await view.page.getByLabel('id_gen').fill(id);
    await view.page.getByLabel('id_gen').press('Enter');
    await view.page.getByRole('button', { name: `Show the attempts of ${id} in detail` }).click();
    const first = view.page.locator('#detail details.attempt').first();
    await first.waitFor();
    expect(await first.locator('.first-bytes').textContent()).toBe(HOSTILE);
    expect(await first.locator('dd').allTextContents()).toContain(HOSTILE);
    expect(await view.page.locator('#detail img, #detail script, #operations img').count()).toBe(0);
    await expectHostileShownSafely(view, 'operator-hostile-answer');
  });
});

describe.skipIf(skipBrowserTests)('the receivers panel and charts under strain', () => {
  const view = pagePerTest();

  it('draws an hour of deliveries, a burst of failures and the latency, phone-sized', async () => {
    // A receiver down for ten minutes of the hour: failures, and slower answers around them.
    const down = (i: number) => i >= 38 && i < 48;
    const buckets = Array.from({ length: 60 }, (_, i) => ({
      start: new Date(Date.UTC(2026, 0, 1, 9, 1 + i)).toISOString(),
      delivered: down(i) ? 2 : 30 + Math.round(8 * Math.sin(i / 4)),
      failed: down(i) ? 25 : i % 11 === 0 ? 1 : 0,
      p50_ms: 40 + Math.round(10 * Math.sin(i / 6)) + (down(i) ? 60 : 0),
      p95_ms: 120 + Math.round(30 * Math.sin(i / 5)) + (down(i) ? 900 : 0),
    }));
    const server = await startDashboard((url) => {
      if (url.pathname === '/v1/stats') return { json: { buckets } };
      if (url.pathname === '/v1/operations') return { json: { operations: [], next_before: null } };
      return undefined;
    });
    try {
      await view.page.setViewportSize(PHONE);
      await view.page.goto(server.url);
      await expect.poll(() => view.page.locator('svg.counts rect.failed').count()).toBe(15);
      expect(await view.page.locator('svg.counts rect.delivered').count()).toBe(60);
      expect(await view.page.locator('svg.latency rect.p95').count()).toBe(60);
      expect(await view.page.locator('#charts').textContent()).toContain('the top of the chart is 1050 ms');
      await shot(view.page, '#activity', 'dashboard-charts');
      expect(view.watch.problems).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('shows hostile keys and errors as text, and the charts of a window chosen', async () => {
    const receivers = [
      {
        key: HOSTILE,
        circuit_state: 'open',
        callbacks: { pending: 0, retrying: 3, delivering: 0, delivered: 0, dead: 2, gone: 0 },
        last_attempt_at: '2026-01-01T10:00:00.000Z',
        last_error: `${HOSTILE} ${'long error '.repeat(100)}`,
        success_rate_1h: 0,
        latency_ms: { p50: 12, p95: 3000 },
      },
      {
        key: 'well.test:443',
        circuit_state: 'closed',
        callbacks: { pending: 0, retrying: 0, delivering: 0, delivered: 5, dead: 0, gone: 0 },
        last_attempt_at: null,
        last_error: null,
        success_rate_1h: null,
        latency_ms: null,
      },
    ];
    const bucket = (i: number, width: number) => ({
      start: new Date(Date.UTC(2026, 0, 1) + i * width).toISOString(),
      delivered: i % 3,
      failed: i % 2,
      p50_ms: i % 4 === 0 ? null : 10 * i,
      p95_ms: i % 4 === 0 ? null : 20 * i,
    });
    const server = await startDashboard((url) => {
      if (url.pathname === '/v1/endpoints') return { json: { endpoints: receivers } };
      if (url.pathname === '/v1/stats') {
        const day = url.searchParams.get('window') === '24h';
        return {
          json: {
            buckets: Array.from({ length: day ? 96 : 60 }, (_, i) => bucket(i, day ? 900_000 : 60_000)),
          },
        };
      }
      if (url.pathname === '/v1/operations')
        return { json: { operations: [operation(HOSTILE)], next_before: null } };
      if (url.pathname.endsWith('/recover')) return { status: 202, json: { requeued: 2 } };
      return undefined;
    });
    try {
      await view.page.goto(server.url);
      const row = view.page.locator('#receivers tr').first();
      await row.waitFor();
      expect(await row.locator('code').textContent()).toBe(HOSTILE);
      expect(await row.locator('.error').textContent()).toContain(HOSTILE);
      expect(await row.textContent()).toContain('3000 ms');
      expect(await view.page.locator('#receivers tr').nth(1).textContent()).toContain('—');
      await expect.poll(() => view.page.locator('svg.counts rect').count()).toBeGreaterThan(40);
      await view.page.locator('#window').selectOption('24h');
      await expect.poll(() => server.of('/v1/stats').some((s) => s.search === '?window=24h')).toBe(true);
      await expect.poll(() => view.page.locator('svg.latency rect.p95').count()).toBe(72);
      expect(await view.page.locator('#receivers img, #receivers script').count()).toBe(0);
      // A time of one's own choice: kept across the panel's refreshes, sent as RFC 3339.
      const posted: string[] = [];
      view.page.on('request', (request) => {
        if (request.url().endsWith('/recover')) posted.push(request.postData() ?? '');
      });
      await row.getByRole('combobox', { name: /since$/ }).selectOption('custom');
      await row.getByLabel('since (your local time)').fill('2026-01-01T10:30');
      await row.getByRole('button', { name: /^Recover the dead callbacks of/ }).click();
      await expect.poll(() => row.locator('.outcome').textContent()).toBe('2 callbacks queued again');
      const expected = await view.page.evaluate(() => new Date('2026-01-01T10:30').toISOString());
      expect(posted.map((body) => JSON.parse(body))).toEqual([{ since: expected }]);
      expect(await row.getByLabel('since (your local time)').inputValue()).toBe('2026-01-01T10:30');
      await expectHostileShownSafely(view, 'operator-hostile-panel');
    } finally {
      await server.close();
    }
  });
});
