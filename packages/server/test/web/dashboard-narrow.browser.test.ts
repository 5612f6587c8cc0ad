/**
 * The service dashboard on a phone (390 px wide): every operation's state, callback state and
 * buttons, and every receiver's circuit and Recover button, lie within the screen, with no
 * sideways scrolling; wider, the tables keep their columns.
 */
import { describe, expect, it } from 'vitest';
import {
  overflowsSideways,
  pagePerTest,
  rowsWithin,
  screenshot,
  skipBrowserTests,
} from '../../../mediahook/test/web/browser.ts';
import { pageServerPerTest } from '../../../mediahook/test/web/page-server.ts';
import { operation, startDashboard } from './dashboard-fixture.ts';

const PHONE = { width: 390, height: 844 };
const LONG = 'x'.repeat(300);

const attempt = (statusCode: number) => ({
  at: '2026-01-01T10:00:02.000Z',
  duration_ms: 12,
  status_code: statusCode,
  error: null,
  response_head: statusCode === 200 ? null : `HTTP/1.1 ${statusCode} Service Unavailable`,
});

const OPERATIONS = [
  operation('dead-with-a-long-id-' + LONG, {
    webhook_url: `http://127.0.0.1:9/${LONG}`,
    error_message: `the generator gave up: ${LONG}`,
    callback: { state: 'dead', next_attempt_at: null, attempts: [attempt(503), attempt(503)] },
  }),
  operation('delivered', {
    state: 'succeeded',
    callback: { state: 'delivered', next_attempt_at: null, attempts: [attempt(200)] },
  }),
  operation('retrying', {
    state: 'succeeded',
    callback: { state: 'retrying', next_attempt_at: '2026-01-01T10:05:00.000Z', attempts: [attempt(500)] },
  }),
  operation('running', {
    state: 'running',
    finished_at: null,
    callback: { state: 'pending', next_attempt_at: null, attempts: [] },
  }),
];

const RECEIVERS = [
  {
    key: `127.0.0.1:9${'/x'.repeat(60)}`,
    circuit_state: 'open',
    callbacks: { dead: 2, delivered: 1, retrying: 1 },
    last_attempt_at: '2026-01-01T10:00:02.000Z',
    last_error: `HTTP 503 ${LONG}`,
    success_rate_1h: 0.25,
    latency_ms: { p50: 10, p95: 12 },
  },
];

describe.skipIf(skipBrowserTests)('the service dashboard on a narrow screen', () => {
  const view = pagePerTest();
  const serve = pageServerPerTest(view);

  it("shows each operation's state, callback state and buttons within 390 px", async () => {
    await serve(() =>
      startDashboard((url) =>
        url.pathname === '/v1/operations'
          ? { json: { operations: OPERATIONS, next_before: null } }
          : url.pathname === '/v1/endpoints'
            ? { json: { endpoints: RECEIVERS } }
            : undefined,
      ),
    );
    // The stand-in API has no result files for the previews to load.
    view.watch.ignore.push(/status of 404/);
    await view.page.setViewportSize(PHONE);
    await view.page.locator('#operations tr[data-id="running"]').waitFor();
    await view.page.locator('#receivers tr[data-key]').waitFor();

    const operations = await rowsWithin(
      view.page,
      '#operations tr[data-id]',
      ['.state:not(.callback-state)', '.callback-state'],
      ['button'],
    );
    expect(operations).toEqual({ rows: OPERATIONS.length, outside: [] });
    // The buttons are there to be measured: Redeliver and Attempts on the finished ones.
    const dead = view.page.locator('#operations tr[data-id^="dead-"]');
    expect(await dead.getByRole('button', { name: /^Redeliver/ }).count()).toBe(1);
    expect(await dead.getByRole('button', { name: /^Show the attempts/ }).count()).toBe(1);
    const rows = view.page.locator('#operations');
    expect(await rows.getByRole('button', { name: /^Redeliver/ }).count()).toBe(3);
    expect(await rows.getByRole('button', { name: /^Show the attempts/ }).count()).toBe(3);

    const receivers = await rowsWithin(view.page, '#receivers tr[data-key]', ['.state', 'button', 'select']);
    expect(receivers).toEqual({ rows: RECEIVERS.length, outside: [] });
    expect(await overflowsSideways(view.page)).toBe(false);
    // Each value under its column's name.
    const deadState = dead.locator('td', { has: view.page.locator('.callback-state') });
    expect(await deadState.getAttribute('data-label')).toBe('callback');
    await screenshot(view.page, 'dashboard-phone');
    expect(view.watch.problems).toEqual([]);
  });

  it('keeps the columns of the tables on a wide screen', async () => {
    await serve(() =>
      startDashboard((url) =>
        url.pathname === '/v1/operations'
          ? { json: { operations: OPERATIONS.slice(1), next_before: null } }
          : undefined,
      ),
    );
    await view.page.locator('#operations tr[data-id="running"]').waitFor();
    expect(await view.page.locator('table.operations thead').isVisible()).toBe(true);
    const cells = view.page.locator('#operations tr[data-id="delivered"] td');
    const first = await cells.nth(0).boundingBox();
    const second = await cells.nth(1).boundingBox();
    // Side by side, one row of cells: not stacked.
    expect(second!.x).toBeGreaterThan(first!.x);
    expect(second!.y).toBe(first!.y);
  });
});
