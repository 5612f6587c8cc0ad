const DEFAULT_PORTS: Readonly<Record<string, string>> = { 'http:': '80', 'https:': '443' };

/**
 * The receiver a webhook URL points at, as `host:port` with the port always written, so that
 * `https://a.example/x` and `https://a.example:443/y` share one circuit and one fairness slot.
 * A text that is not an absolute URL keys as itself: the sender refuses it later, and it must
 * not share a slot with real receivers.
 *
 * @example
 * endpointKeyOf('https://Hooks.Example.com/cb?x=1'); // 'hooks.example.com:443'
 * endpointKeyOf('http://[::1]:9000/'); // '[::1]:9000'
 */
export function endpointKeyOf(webhookUrl: string): string {
  let url: URL;
  try {
    url = new URL(webhookUrl);
  } catch {
    return `invalid:${webhookUrl.slice(0, 200)}`;
  }
  const port = url.port || DEFAULT_PORTS[url.protocol] || '0';
  return `${url.hostname.toLowerCase()}:${port}`;
}
