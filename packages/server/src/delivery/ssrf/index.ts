/**
 * The SSRF guard of webhook deliveries: an address classifier, the policy (allow-list and
 * `allowPrivate`), the URL checks, and name resolution and an undici Agent that check the
 * address actually dialled. Depends on nothing else of mediahook.
 */

export {
  ADDRESS_CATEGORIES,
  type AddressCategory,
  type AddressClassification,
  classifyAddress,
  embeddedIpv4,
  type Ipv4Embedding,
} from './address-classifier.ts';
export {
  type ConnectOptions,
  type Connector,
  createGuardedAgent,
  createGuardedConnector,
  type GuardedAgentOptions,
  type GuardedConnectorOptions,
} from './guarded-agent.ts';
export {
  createGuardedLookup,
  DEFAULT_RESOLVE_TIMEOUT_MS,
  type GuardedResolveOptions,
  type ResolvedAddress,
  type ResolveOptions,
  type Resolver,
  resolveAllowedAddresses,
  systemResolver,
} from './guarded-lookup.ts';
export {
  type Cidr,
  cidrContains,
  formatCidr,
  formatIpAddress,
  type IpAddress,
  parseCidr,
  parseHostAddress,
  parseIpAddress,
  parseIpv4Hostname,
  parseIpv6,
  parseStrictIpv4,
} from './ip-address.ts';
export {
  findSsrfRefusal,
  isSsrfRefusedError,
  SSRF_REFUSAL_CODES,
  type SsrfRefusalCode,
  type SsrfRefusalDetails,
  SsrfRefusedError,
} from './ssrf-error.ts';
export {
  type AddressVerdict,
  allowListEntryForHostname,
  assertAddressAllowed,
  describeRefusal,
  judgeAddress,
  normalizeHostname,
  PRIVATE_CATEGORIES,
  type SsrfPolicy,
  validateSsrfPolicy,
} from './ssrf-policy.ts';
export { checkWebhookUrl, WEBHOOK_SCHEMES } from './url-policy.ts';
