/**
 * Where webhooks may go. The document requires HTTPS and a publicly reachable address.
 * Test mode also accepts `http://` to a loopback host so local receivers work; live mode
 * refuses loopback, private and link-local addresses (no server-side request forgery),
 * at creation for literal addresses and again at delivery after DNS resolution.
 */
import { BlockList, isIP } from 'node:net';
import type { Mode } from '../store/types.ts';

const LOOPBACK_NAMES = new Set(['localhost', 'localhost.']);

const nonPublic = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) nonPublic.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) nonPublic.addSubnet(network, prefix, 'ipv6');

/** `[::1]` → `::1`; IPv4-mapped IPv6 (`::ffff:127.0.0.1`) → its IPv4 address. */
function bareHost(hostname: string): string {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(host);
  return mapped ? mapped[1]! : host;
}

export function isLoopbackHost(hostname: string): boolean {
  const host = bareHost(hostname);
  if (LOOPBACK_NAMES.has(host)) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/** True for an IP address that is loopback, private, link-local or otherwise not public. */
export function isNonPublicAddress(address: string): boolean {
  const host = bareHost(address);
  const family = isIP(host);
  if (family === 0) return false;
  return nonPublic.check(host, family === 4 ? 'ipv4' : 'ipv6');
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
  if (mode === 'live' && (loopback || isNonPublicAddress(parsed.hostname))) {
    return 'webhookUrl must be publicly reachable: live mode refuses loopback, private and link-local addresses';
  }
  return undefined;
}
