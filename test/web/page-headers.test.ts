/**
 * The pages' CSP admits their inline script and style by hash: the hash is of the exact text the
 * page embeds, and a text the HTML parser would not hand over as written is refused up front.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DASHBOARD_HEADERS, dashboardPage } from '../../packages/server/src/web/dashboard-page.ts';
import { INSPECTOR_HEADERS, inspectorPage } from '../../packages/mediahook/src/web/inspector-page.ts';
import { pageHeaders } from '../../packages/mediahook/src/web/page-headers.ts';

function inline(html: string, element: 'script' | 'style'): string {
  const open = `<${element}>`;
  const start = html.indexOf(open) + open.length;
  return html.slice(start, html.indexOf(`</${element}>`, start));
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

describe('the pages’ Content-Security-Policy', () => {
  it.each([
    ['dashboard', dashboardPage(), DASHBOARD_HEADERS],
    ['inspector', inspectorPage(), INSPECTOR_HEADERS],
  ])('admits exactly the %s page’s own script and style', (_name, html, headers) => {
    const policy = headers['content-security-policy']!;
    expect(policy).toContain(`script-src ${sha256(inline(html, 'script'))};`);
    expect(policy).toContain(`style-src ${sha256(inline(html, 'style'))};`);
    expect(html.match(/<script>/g)).toHaveLength(1);
    expect(html.match(/<style>/g)).toHaveLength(1);
  });

  it('refuses a text the HTML parser would change or end early', () => {
    const media = { media: ["'self'"] };
    expect(() => pageHeaders('a();\r\nb();', '', media)).toThrow(/CR/);
    expect(() => pageHeaders("x = '</SCRIPT>';", '', media)).toThrow(/script/);
    expect(() => pageHeaders('', 'a { content: "</style>" }', media)).toThrow(/style/);
    expect(() => pageHeaders('x = "<!--";', '', media)).toThrow(/<!--/);
    expect(() => pageHeaders('a();', 'b {}', media)).not.toThrow();
  });
});
