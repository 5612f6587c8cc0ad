import { createHash } from 'node:crypto';

/** What a page of ours may load besides its own inline script and style. */
interface PageSources {
  /** Sources of <img> and <video> (`'self'`, `blob:`). */
  media: readonly string[];
}

/**
 * The CSP source admitting an inline `<script>` or `<style>` whose text is exactly `text`: the
 * page must embed it unchanged (`<script>${text}</script>`). The hash is of what the browser
 * parses, so a text the HTML parser would change or end early cannot be hashed ahead: a CR
 * (read as LF), a closing tag of its own element, or `<!--` (which changes how a script ends).
 */
function hashSource(text: string, element: 'script' | 'style'): string {
  if (text.includes('\r') || text.toLowerCase().includes(`</${element}`) || text.includes('<!--')) {
    throw new Error(`an inline ${element} with a CR, </${element} or <!-- would not run as hashed`);
  }
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/**
 * The response headers of a self-contained page: a Content-Security-Policy that runs only the
 * page's own inline script and style (by hash, so nothing injected into the page could run),
 * fetches only from the same origin, loads nothing from elsewhere and cannot be framed.
 */
export function pageHeaders(script: string, style: string, sources: PageSources): Record<string, string> {
  const media = sources.media.join(' ');
  const policy = [
    "default-src 'none'",
    `script-src ${hashSource(script, 'script')}`,
    `style-src ${hashSource(style, 'style')}`,
    // data: for the empty favicon, which keeps the browser from asking for /favicon.ico.
    `img-src ${media} data:`,
    `media-src ${media}`,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return {
    'content-security-policy': policy,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
}
