/**
 * A stand-in server for the page tests: it serves one page (with its CSP headers) at `/` and
 * answers its API from a test's function, with the weak ETag, `Cache-Control: no-cache` and 304
 * the real servers give, so that the browser's own cache is at work (Playwright's page.route
 * turns that cache off). It notes every request the page makes.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterEach, expect } from 'vitest';

/** What a test answers for one request: JSON (200 unless told), or nothing for a 404. */
export interface Answer {
  status?: number;
  json?: unknown;
  body?: Buffer;
  type?: string;
}

/** A request the page made. */
export interface Seen {
  path: string;
  search: string;
  status: number;
  ifNoneMatch: string | undefined;
  authorization: string | undefined;
  at: number;
}

export interface PageServer {
  url: string;
  seen: Seen[];
  /** The requests for `path` so far. */
  of(path: string | RegExp): Seen[];
  close(): Promise<void>;
}

export async function startPageServer(
  html: string,
  headers: Readonly<Record<string, string>>,
  answer: (url: URL, req: IncomingMessage) => Answer | undefined | Promise<Answer | undefined>,
): Promise<PageServer> {
  const seen: Seen[] = [];
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/') {
      res.writeHead(200, { ...headers, 'content-type': 'text/html; charset=utf-8' });
      res.end(html);
      return;
    }
    const note = (status: number) =>
      seen.push({
        path: url.pathname,
        search: url.search,
        status,
        ifNoneMatch: req.headers['if-none-match'],
        authorization: req.headers.authorization,
        at: Date.now(),
      });
    const given = await answer(url, req);
    if (!given) {
      note(404);
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'not_found', message: 'no such thing' } }));
      return;
    }
    const status = given.status ?? 200;
    const body = given.body ?? Buffer.from(JSON.stringify(given.json));
    const tag = `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 20)}"`;
    const common = {
      'content-type': given.type ?? 'application/json; charset=utf-8',
      etag: tag,
      'cache-control': 'private, no-cache',
    };
    if (status === 200 && req.headers['if-none-match'] === tag) {
      note(304);
      res.writeHead(304, common);
      res.end();
      return;
    }
    note(status);
    res.writeHead(status, { ...common, 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    of: (path) => seen.filter((s) => (typeof path === 'string' ? s.path === path : path.test(s.path))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Makes the page believe it is hidden (or shown again), as a background tab is; run in the page:
 * `page.evaluate(setHidden, true)`.
 */
function setHidden(hidden: boolean): void {
  const doc = (globalThis as any).document;
  Object.defineProperty(doc, 'visibilityState', {
    configurable: true,
    get: () => (hidden ? 'hidden' : 'visible'),
  });
  Object.defineProperty(doc, 'hidden', { configurable: true, get: () => hidden });
  doc.dispatchEvent(new (globalThis as any).Event('visibilitychange'));
}

/**
 * A page server for each test, closed after it: the function returned starts one with `start`
 * and opens its page in `view.page`.
 */
export function pageServerPerTest(view: {
  readonly page: Page;
}): (start: () => Promise<PageServer>) => Promise<PageServer> {
  let server: PageServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  return async (start) => {
    server = await start();
    await view.page.goto(server.url);
    return server;
  };
}

/**
 * Hides the page and checks that it asks `live` nothing at `path` for `quietMs` (more than its
 * polling interval), then shows it again and checks that it asks at once.
 */
export async function expectRestWhileHidden(
  page: Page,
  live: PageServer,
  path: string,
  quietMs: number,
): Promise<void> {
  await page.evaluate(setHidden, true);
  await page.waitForTimeout(300); // a request already in flight ends
  const hiddenFrom = live.of(path).length;
  await page.waitForTimeout(quietMs);
  expect(live.of(path).length).toBe(hiddenFrom);
  const shownAt = Date.now();
  await page.evaluate(setHidden, false);
  await expect.poll(() => live.of(path).length, { timeout: 2000 }).toBe(hiddenFrom + 1);
  expect(live.of(path).at(-1)!.at - shownAt).toBeLessThan(500);
}
