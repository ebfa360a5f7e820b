/**
 * Where webhooks may go. The document requires HTTPS and a publicly reachable address.
 * Test mode also accepts loopback, over `http://` too, so local receivers work; no mode
 * reaches an address in a special-purpose range (private, link-local, documentation,
 * translated, ...: no server-side request forgery), checked at creation for literal
 * addresses and again at delivery after DNS resolution.
 */
import ipaddr from 'ipaddr.js';
import type { Mode } from '../store/types.ts';

/**
 * IANA special-purpose ranges (RFC 6890 registries) that ipaddr.js's range table files
 * under `unicast`; every other range it names (private, loopback, link-local, reserved
 * and documentation, carrier-grade NAT, multicast, IPv4-mapped and -translated, NAT64,
 * 6to4, Teredo, ...) is refused by its name.
 */
const ALSO_SPECIAL = [
  ['198.18.0.0', 15], // RFC 2544 benchmarking
  ['100::', 64], // RFC 6666 discard-only
  ['64:ff9b:1::', 48], // RFC 8215 local-use NAT64
  ['2001::', 23], // RFC 2928 IETF protocol assignments (benchmarking, ORCHIDv2, ...)
  ['3fff::', 20], // RFC 9637 documentation
  ['5f00::', 16], // RFC 9602 segment routing SIDs
  // RFC 4291 2.5.5.1 IPv4-compatible addresses (::a.b.c.d), deprecated and routed nowhere:
  // ::127.0.0.1 is loopback in disguise on stacks that still map them. (:: and ::1 are
  // refused by their own names first.)
  ['::', 96],
].map(([network, bits]) => [ipaddr.parse(network as string), bits as number] as const);

/** The IP address a URL host or resolved address names (brackets off), or undefined for a name. */
function ipOf(host: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = host.replace(/^\[|\]$/g, '');
  return ipaddr.isValid(bare) ? ipaddr.parse(bare) : undefined;
}

/** RFC 6761 6.3: `localhost` and every name under it are loopback; so is an IPv4-mapped loopback address. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const ip = ipOf(host);
  return ip !== undefined && ipaddr.process(ip.toString()).range() === 'loopback';
}

/** True for an IP address in any special-purpose range: only a global unicast address is public. */
export function isNonPublicAddress(address: string): boolean {
  const ip = ipOf(address);
  if (!ip) return false;
  if (ip.range() !== 'unicast') return true;
  return ALSO_SPECIAL.some(([network, bits]) => network.kind() === ip.kind() && ip.match(network, bits));
}

/** Whether a webhook may be sent to this (resolved or literal) address in this mode. */
export function reachableFor(mode: Mode, address: string): boolean {
  return !isNonPublicAddress(address) || (mode === 'test' && isLoopbackHost(address));
}

/** Why a webhook URL is refused for this mode, or undefined when it is acceptable. */
export function refuseWebhookUrl(url: string, mode: Mode): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'webhookUrl must be a valid absolute URL';
  }
  const loopback = isLoopbackHost(parsed.hostname);
  if (parsed.protocol === 'http:' && !(mode === 'test' && loopback)) {
    return 'webhookUrl must use https (test-mode keys may also use http to a loopback host)';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'webhookUrl must use https';
  if (mode === 'live' && loopback) return 'webhookUrl must be publicly reachable: live mode refuses loopback addresses';
  if (!reachableFor(mode, parsed.hostname)) {
    return 'webhookUrl must be publicly reachable: private, link-local, documentation and other special-purpose addresses are refused';
  }
  return undefined;
}
