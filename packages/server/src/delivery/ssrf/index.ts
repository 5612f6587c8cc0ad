/**
 * The SSRF guard of webhook deliveries: an address classifier, the policy (allow-list and
 * `allowPrivate`), the URL checks, and name resolution and an undici Agent that check the
 * address actually dialled. Depends on nothing else of mediahook.
 */

export { type AddressCategory, classifyAddress, embeddedIpv4 } from './address-classifier.ts';
export {
  type Connector,
  createGuardedAgent,
  type GuardedAgentOptions,
  type GuardedConnectorOptions,
} from './guarded-agent.ts';
export {
  createGuardedLookup,
  type ResolvedAddress,
  type Resolver,
  resolveAllowedAddresses,
  systemResolver,
} from './guarded-lookup.ts';
export {
  cidrContains,
  formatIpAddress,
  parseCidr,
  parseHostAddress,
  parseIpAddress,
  parseIpv4Hostname,
  parseIpv6,
  parseStrictIpv4,
} from './ip-address.ts';
export { findSsrfRefusal, type SsrfRefusalCode, SsrfRefusedError } from './ssrf-error.ts';
export { judgeAddress, type SsrfPolicy, validateSsrfPolicy } from './ssrf-policy.ts';
export { checkWebhookUrl } from './url-policy.ts';
