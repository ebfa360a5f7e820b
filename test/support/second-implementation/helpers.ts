/**
 * The second implementation's small pure helpers: timestamps in whole seconds, digests,
 * canonical JSON (an "identical body" is the same JSON value), decimal places, absolute
 * URLs, and which IP addresses are public.
 */
import { createHash } from 'node:crypto';
import { SECOND } from './types.ts';

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whole-second ISO 8601 UTC (conv.timestamps); ours: no milliseconds. */
export const iso = (ms: number) => new Date(Math.floor(ms / SECOND) * SECOND).toISOString().replace('.000Z', 'Z');
export const wholeSecond = (ms: number) => Math.floor(ms / SECOND) * SECOND;

export const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** "Identical body" means the same JSON value: key order and whitespace do not matter (ours). */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isObject(value))
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/** Decimal places of a number's value, counted exactly from its shortest decimal form. */
export function decimalPlaces(n: number): number {
  const [mantissa = '', exponent = '0'] = String(n).split('e');
  const fraction = mantissa.split('.')[1] ?? '';
  return Math.max(0, fraction.length - Number(exponent));
}

/** Valid absolute URL: RFC 3986 characters and syntax, and parseable as the URL Standard does. */
export function absoluteUrl(text: string): URL | null {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/.test(text)) return null;
  if (/%(?![0-9A-Fa-f]{2})/.test(text)) return null;
  try {
    const url = new URL(text);
    if (['http:', 'https:', 'ws:', 'wss:', 'ftp:'].includes(url.protocol) && !url.hostname) return null;
    return url;
  } catch {
    return null;
  }
}

export function ipv4Number(text: string): number {
  return text.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

/** Special-purpose IPv4 ranges (IANA registry): none is reachable from the public internet. */
export const NON_PUBLIC_V4: Array<[string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

export function publicV4(address: string): boolean {
  const n = ipv4Number(address);
  return !NON_PUBLIC_V4.some(
    ([base, bits]) => Math.floor(n / 2 ** (32 - bits)) === Math.floor(ipv4Number(base) / 2 ** (32 - bits)),
  );
}

export function ipv6Groups(address: string): number[] {
  let text = address;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const n = ipv4Number(v4[1]!);
    text = `${text.slice(0, v4.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const middle = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  return [...left, ...middle, ...right].map((g) => Number.parseInt(g, 16));
}

/** Only global unicast (2000::/3) is public, less documentation, 6to4 and Teredo/IETF blocks. */
export function publicV6(address: string): boolean {
  const [a = 0, b = 0] = ipv6Groups(address);
  if ((a & 0xe000) !== 0x2000) return false;
  if (a === 0x2001 && (b === 0x0db8 || b < 0x0200)) return false;
  return a !== 0x2002;
}
