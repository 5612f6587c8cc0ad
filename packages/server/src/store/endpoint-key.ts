const DEFAULT_PORTS: Readonly<Record<string, string>> = { 'http:': '80', 'https:': '443' };

/**
 * The receiver a webhook URL points at, as `host:port` with the port always written and no
 * trailing dot, so that `https://a.example/x`, `https://a.example:443/y` and
 * `https://a.example./z` share one circuit and one fairness slot.
 * A text that is not an absolute URL keys as itself: the sender refuses it later, and it must
 * not share a slot with real receivers.
 *
 * @example
 * endpointKeyOf('https://Hooks.Example.com/cb?x=1'); // 'hooks.example.com:443'
 * endpointKeyOf('http://[::1]:9000/'); // '[::1]:9000'
 * endpointKeyOf('http://localhost.:8080/'); // 'localhost:8080'
 */
export function endpointKeyOf(webhookUrl: string): string {
  let url: URL;
  try {
    url = new URL(webhookUrl);
  } catch {
    return `invalid:${webhookUrl.slice(0, 200)}`;
  }
  const port = url.port || DEFAULT_PORTS[url.protocol] || '0';
  // `a.example.` is `a.example` written fully qualified: the same receiver, one slot.
  const host = url.hostname.toLowerCase().replace(/(?<=[^.])\.$/, '');
  return `${host}:${port}`;
}
