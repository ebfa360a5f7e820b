// Verifying a delivery with WebCrypto alone (browsers, workers, Deno, Bun, Node): the
// document's receiver steps, in order. Returns the parsed event; throws to reject.
export async function verifyDelivery(rawBody, header, secret, now = Date.now() / 1000) {
  // 1. Split the header on commas, each part on its first "="; take t and v1 by name.
  let t;
  const v1 = [];
  for (const part of (header ?? '').split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const [name, value] = [part.slice(0, eq).trim(), part.slice(eq + 1).trim()];
    if (name === 't' && t === undefined && /^\d+$/.test(value)) t = Number(value);
    if (name === 'v1') v1.push(value);
  }
  if (t === undefined || v1.length === 0) throw new Error('reject: no t or no v1');
  // 2. The digest over `<t>.` and the exact raw bytes, keyed with the whole whsec_ string.
  const bytes = typeof rawBody === 'string' ? new TextEncoder().encode(rawBody) : new Uint8Array(rawBody);
  const signed = new Uint8Array([...new TextEncoder().encode(`${t}.`), ...bytes]);
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['verify'],
  );
  // 3. Compared in constant time: HMAC verify does it.
  let matched = false;
  for (const hex of v1) {
    const digest = hex.match(/^(?:[0-9a-f]{2})+$/i) ? Uint8Array.from(hex.match(/../g), (h) => parseInt(h, 16)) : null;
    if (digest && (await crypto.subtle.verify('HMAC', key, digest, signed))) matched = true;
  }
  if (!matched) throw new Error('reject: no v1 matches');
  // 4. Reject a t older than five minutes.
  if (now - t > 300) throw new Error('reject: t is older than five minutes');
  // 5. Only now parse the body and act.
  return JSON.parse(new TextDecoder().decode(bytes));
}
