/**
 * Where webhooks may go. The document requires HTTPS and a publicly reachable address.
 * Test mode also accepts loopback, over `http://` too, so local receivers work; no mode
 * reaches private, link-local or otherwise non-public addresses (no server-side request
 * forgery), checked at creation for literal addresses and again at delivery after DNS
 * resolution.
 */
import { BlockList, isIP } from 'node:net';
import type { Mode } from '../store/types.ts';

const nonPublic = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  nonPublic.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  // Unspecified, loopback and IPv4-compatible (deprecated); the discard prefix; NAT64 for
  // local use (RFC 8215); Teredo and 6to4, whose embedded IPv4 is relayed; documentation;
  // unique local, link-local and multicast.
  ['::', 96],
  ['100::', 64],
  ['64:ff9b:1::', 48],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  nonPublic.addSubnet(network, prefix, 'ipv6');
const nat64 = new BlockList();
nat64.addSubnet('64:ff9b::', 96, 'ipv6');

/** `[::1]` → `::1`; IPv4-mapped IPv6 (`::ffff:127.0.0.1`) → its IPv4 address. */
function bareHost(hostname: string): string {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(host);
  if (mapped) return mapped[1]!;
  // The URL Standard writes the IPv4 part of an IPv6 address in hex (::ffff:7f00:1).
  const hexMapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  return hexMapped ? ipv4From(hexMapped[1]!, hexMapped[2]!) : host;
}

/** The IPv4 address held by two IPv6 groups: `a9fe`, `a9fe` → 169.254.169.254. */
function ipv4From(high: string, low: string): string {
  const h = parseInt(high || '0', 16);
  const l = parseInt(low || '0', 16);
  return `${h >> 8}.${h & 255}.${l >> 8}.${l & 255}`;
}

/** RFC 6761 6.3: `localhost` and every name under it are loopback. */
export function isLoopbackHost(hostname: string): boolean {
  const host = bareHost(hostname).replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/** True for an IP address that is loopback, private, link-local or otherwise not public. */
export function isNonPublicAddress(address: string): boolean {
  const host = bareHost(address);
  const family = isIP(host);
  if (family === 0) return false;
  if (family === 6 && nat64.check(host, 'ipv6')) {
    // NAT64 (RFC 6052) reaches the IPv4 address in its last 32 bits: judge that one.
    const groups = new URL(`http://[${host}]/`).hostname.slice(1, -1).split(':');
    return isNonPublicAddress(ipv4From(groups.at(-2)!, groups.at(-1)!));
  }
  return nonPublic.check(host, family === 4 ? 'ipv4' : 'ipv6');
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
    return 'webhookUrl must be publicly reachable: private, link-local and other non-public addresses are refused';
  }
  return undefined;
}
