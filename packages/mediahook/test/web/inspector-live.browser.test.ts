/**
 * The receiver inspector as it lives in a tab: it revalidates its list through the browser's
 * cache and draws it again only on a change, rests while hidden, keeps every row a few lines
 * high whatever it received, shows invisible characters instead of obeying them, and tells the
 * declared type of a file beside the detected one, with a link to the stored file.
 */
import { describe, expect, it } from 'vitest';
import { INSPECTOR_HEADERS, inspectorPage } from '../../src/web/inspector-page.ts';
import { inspectedRequest as request } from './inspector-fixture.ts';
import { overflowsSideways, pagePerTest, screenshot, skipBrowserTests } from './browser.ts';
import { expectRestWhileHidden, pageServerPerTest, startPageServer } from './page-server.ts';

function withFile(id: string, file: Record<string, unknown>): Record<string, unknown> {
  const made = request(id);
  Object.assign(made.callback as Record<string, unknown>, { event: 'success', message: null, file });
  return made;
}

describe.skipIf(skipBrowserTests)('the receiver inspector in a tab', () => {
  const view = pagePerTest();
  let requests: unknown[] = [];

  const serve = pageServerPerTest(view);
  const open = () =>
    serve(() =>
      startPageServer(inspectorPage(), INSPECTOR_HEADERS, (url) => {
        if (url.pathname === '/requests.json') return { json: requests };
        if (url.pathname.startsWith('/files/'))
          return { body: Buffer.from('not a jpeg'), type: 'image/jpeg' };
        return undefined;
      }),
    );

  it('revalidates the list through the cache and leaves an unchanged list as it is', async () => {
    requests = [request('first')];
    const live = await open();
    const row = view.page.locator('#requests tbody tr').first();
    await row.waitFor();
    await row.evaluate((node: any) => (node.dataset.mark = 'drawn once'));
    await expect.poll(() => live.of('/requests.json').length, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    const later = live.of('/requests.json').slice(1);
    expect(later.every((seen) => seen.ifNoneMatch?.startsWith('W/"'))).toBe(true);
    expect(later.every((seen) => seen.status === 304)).toBe(true);
    expect(await row.getAttribute('data-mark')).toBe('drawn once');
    requests = [request('second'), request('first')];
    await expect.poll(() => view.page.locator('#requests tbody tr').count(), { timeout: 10_000 }).toBe(2);
    expect(view.watch.problems).toEqual([]);
  });

  it('asks nothing while the tab is hidden, and asks at once when it is shown again', async () => {
    requests = [request('first')];
    const live = await open();
    await view.page.locator('#requests tbody tr').waitFor();
    await expectRestWhileHidden(view.page, live, '/requests.json', 2500);
  });

  it('shows invisible characters as escapes, everywhere a sender could hide them', async () => {
    requests = [
      withFile('\u202Egpj.exe', {
        url: '/files/a.jpg',
        path: '/out/a.jpg',
        filename: '\u202Egpj.exe',
        declaredType: 'application/octet-stream',
        mediaType: 'image/jpeg',
        bytes: 10,
        sha256: null,
      }),
      request('bidi', {
        headers: { 'x-note': 'a\u200Fb\u2066c\u2069d\u200Be\uFEFF' },
        callback: {
          ...(request('x').callback as object),
          id_gen: 'id\u200E',
          // Joiners and flag tags are parts of the text (Persian, emoji), and stay as they are.
          message:
            'msg\u202Dtail می\u200Cخواهم 👩\u200D💻 🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}',
        },
      }),
    ];
    await open();
    const rows = view.page.locator('#requests tbody tr');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(2);
    const table = (await view.page.locator('#requests').textContent()) ?? '';
    expect(table).not.toMatch(/[\u200B\u200E\u200F\u202A-\u202E\u2066-\u2069\uFEFF]/);
    expect(table).toContain('filename=\\u202Egpj.exe');
    expect(table).toContain('x-note: a\\u200Fb\\u2066c\\u2069d\\u200Be\\uFEFF');
    expect(table).toContain('msg\\u202Dtail');
    expect(table).toContain(
      'می\u200Cخواهم 👩\u200D💻 🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}',
    );
    expect(await rows.nth(0).locator('.cc').first().textContent()).toBe('\\u202E');
    expect(await rows.nth(0).locator('img').getAttribute('alt')).toBe('received \\u202Egpj.exe');
    await screenshot(view.page, 'inspector-invisible');
  });

  it('tells the declared type when it differs from the detected one, and links the stored file', async () => {
    view.watch.ignore.push(/a\.mp4/);
    const file = {
      path: '/out/x.jpg',
      filename: 'x.jpg',
      mediaType: 'image/jpeg',
      bytes: 10,
      sha256: null,
    };
    requests = [
      withFile('same', { ...file, url: '/files/same.jpg', declaredType: 'image/jpeg' }),
      withFile('other', { ...file, url: '/files/other.jpg', declaredType: 'image/png' }),
      withFile('video', { ...file, url: '/files/a.mp4', mediaType: 'video/mp4', declaredType: 'video/mp4' }),
    ];
    await open();
    const rows = view.page.locator('#requests tbody tr');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(3);
    expect(await rows.nth(0).textContent()).not.toContain('declared');
    expect(await rows.nth(1).locator('.declared').textContent()).toBe('declared image/png');
    expect(await rows.nth(1).textContent()).toContain('image/jpeg, 10 B');
    const link = rows.nth(1).getByRole('link', { name: 'open the stored file' });
    expect(await link.getAttribute('href')).toBe('/files/other.jpg');
    expect(await rows.nth(2).locator('video').getAttribute('aria-label')).toBe('received x.jpg');
  });

  it('keeps every row a few lines high whatever it received, all of it a click away', async () => {
    const huge = 'q'.repeat(30_000);
    requests = [
      request('huge', {
        headers: {
          'user-agent': `agent ${'h'.repeat(2000)}`,
          'content-type': 'multipart/form-data; boundary=x',
        },
        callback: { ...(request('x').callback as object), id_gen: 'i'.repeat(256), message: huge },
      }),
      request('words', {
        callback: { ...(request('x').callback as object), message: 'word '.repeat(400) },
      }),
    ];
    await open();
    const rows = view.page.locator('#requests tbody tr');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(2);
    for (const i of [0, 1]) expect((await rows.nth(i).boundingBox())!.height).toBeLessThan(320);
    const widths = await view.page
      .locator('#requests thead th')
      .evaluateAll((cells: any[]) => cells.map((cell) => cell.getBoundingClientRect().width));
    expect(Math.min(...widths)).toBeGreaterThan(90);
    expect(await rows.nth(0).textContent()).toContain(huge);
    await rows.nth(0).getByRole('button', { name: 'show all 30,000 characters' }).click();
    const less = rows.nth(0).getByRole('button', { name: 'show less' });
    expect(await less.getAttribute('aria-expanded')).toBe('true');
    const box = rows.nth(0).locator('.long.open > .text');
    expect(await box.evaluate((node: any) => node.scrollHeight > node.clientHeight)).toBe(true);
    // A new request redraws the list: what was opened stays open.
    requests = [request('newer'), ...requests];
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(3);
    expect(await rows.nth(1).locator('.long.open').count()).toBe(1);
    await view.page.setViewportSize({ width: 375, height: 800 });
    expect(await overflowsSideways(view.page)).toBe(false);
    await screenshot(view.page, 'inspector-long-narrow');
  });
});
