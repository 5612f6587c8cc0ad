/** Debian's Chromium driven by playwright-core, headless, for the page tests. */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';

export const ARTIFACTS = fileURLToPath(new URL('../../../../test-artifacts/', import.meta.url));

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Whether the page tests are skipped: only when Chromium is missing outside CI (CI installs it,
 * and there a missing browser must fail the run). Says so visibly when it skips.
 */
export const skipBrowserTests = !existsSync(CHROMIUM) && process.env.CI !== 'true';
if (skipBrowserTests) {
  console.warn(`page tests: SKIPPING, no Chromium at ${CHROMIUM} (apt-get install -y chromium)`);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/** Keeps a screenshot of the page as a test artifact. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
}

/** What the tests read of an <img> inside the page (the project is typed without the DOM). */
export interface ImageLike {
  complete: boolean;
  naturalWidth: number;
}

/** What the tests use of a <video> inside the page. */
export interface VideoLike {
  play(): Promise<void>;
  currentTime: number;
  videoWidth: number;
  error: { code: number } | null;
}

/**
 * Collects what a page reports as wrong: console errors, uncaught exceptions and
 * Content-Security-Policy violations. `ignore` drops the lines a test provokes on purpose.
 */
export function watchProblems(page: Page): { problems: string[]; ignore: RegExp[] } {
  const watch = { problems: [] as string[], ignore: [] as RegExp[] };
  const add = (line: string) => {
    if (!watch.ignore.some((pattern) => pattern.test(line))) watch.problems.push(line);
  };
  page.on('console', (message) => {
    if (message.type() === 'error') add(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => add(`uncaught: ${error.message}`));
  page.on('dialog', (dialog) => {
    add(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return watch;
}

/** Whether the page is wider than its viewport, i.e. scrolls sideways as a whole. */
export function overflowsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => {
    const root = (
      globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }
    ).document.documentElement;
    return root.scrollWidth > root.clientWidth;
  });
}

/** Where the rows of a table are on a page, against its viewport's width. */
interface RowsWithin {
  /** How many rows matched. */
  rows: number;
  /** Each part missing from a row, or lying (partly) left or right of the viewport. */
  outside: string[];
}

/**
 * Measures each row matching `rowSelector` (by bounding box, as the page lays it out): every
 * `required` part must be in it, and it and every `optional` part that is there must lie
 * within the viewport's width, so that it is seen without scrolling sideways.
 *
 * @example
 * expect(await rowsWithin(page, '#operations tr', ['.state'], ['button'])).toEqual({ rows: 3, outside: [] });
 */
export async function rowsWithin(
  page: Page,
  rowSelector: string,
  required: string[],
  optional: string[] = [],
): Promise<RowsWithin> {
  const width = page.viewportSize()!.width;
  const rows = await page.locator(rowSelector).all();
  const outside: string[] = [];
  for (const [index, row] of rows.entries()) {
    const name = (await row.getAttribute('data-id')) ?? (await row.getAttribute('data-key')) ?? `#${index}`;
    for (const selector of [...required, ...optional]) {
      const parts = await row.locator(selector).all();
      if (parts.length === 0 && required.includes(selector)) outside.push(`${name}: no ${selector}`);
      for (const part of parts) {
        const box = await part.boundingBox();
        if (!box || box.width === 0 || box.x < 0 || box.x + box.width > width) {
          outside.push(`${name}: ${selector} at ${box ? `${box.x}..${box.x + box.width}` : 'nowhere'}`);
        }
      }
    }
  }
  return { rows: rows.length, outside };
}

/** A suite's page of the moment: a fresh one for each test, with its problems watched. */
interface PagePerTest {
  readonly page: Page;
  readonly watch: ReturnType<typeof watchProblems>;
}

/**
 * Registers the hooks of a suite that launches Chromium once and gives each test a fresh
 * 1280×800 page in a context of its own, whose console errors and failed requests are watched.
 *
 * @example
 * const view = pagePerTest();
 * it('…', async () => { await view.page.goto(url); expect(view.watch.problems).toEqual([]); });
 */
export function pagePerTest(): PagePerTest {
  let browser: Browser | undefined;
  let context: BrowserContext | undefined;
  let current: { page: Page; watch: ReturnType<typeof watchProblems> } | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  beforeEach(async () => {
    context = await browser!.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    // A step that cannot happen fails with what it waited for, before the test's own timeout.
    page.setDefaultTimeout(10_000);
    current = { page, watch: watchProblems(page) };
  });
  afterEach(async () => {
    await context?.close();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return {
    get page() {
      return current!.page;
    },
    get watch() {
      return current!.watch;
    },
  };
}

/** Markup and script a sender could put in any text: a page must show it as text, and run none of it. */
export const HOSTILE =
  "<img src=x onerror=\"document.title='pwned'\">\"'><script>document.title='pwned'</script>";

/**
 * Checks a page that shows HOSTILE text: it overflows sideways neither wide nor 375 px wide,
 * none of the text ran, and nothing went wrong in it; the narrow page is saved as `shot`.
 */
export async function expectHostileShownSafely(view: PagePerTest, shot: string): Promise<void> {
  expect(await overflowsSideways(view.page)).toBe(false);
  await view.page.setViewportSize({ width: 375, height: 800 });
  expect(await overflowsSideways(view.page)).toBe(false);
  await screenshot(view.page, shot);
  expect(await view.page.title()).not.toBe('pwned');
  expect(view.watch.problems).toEqual([]);
}
