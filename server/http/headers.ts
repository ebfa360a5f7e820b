/**
 * Header fields the server reads that RFC 9110 allows only once. Node keeps the first of
 * a repeated Authorization or Content-Type and joins repeated unknown fields (such as
 * Idempotency-Key) with ", ", so a repeat is only visible in the raw header lines.
 */
import type { IncomingMessage } from 'node:http';

/** Whether the field `name` (lower-case) was sent more than once. */
export function sentTwice(req: IncomingMessage, name: string): boolean {
  const raw = req.rawHeaders;
  let seen = false;
  for (let i = 0; i < raw.length; i += 2) {
    const field = raw[i]!;
    if (field.length !== name.length || field.toLowerCase() !== name) continue;
    if (seen) return true;
    seen = true;
  }
  return false;
}

/**
 * Why the request body's codings cannot be read, or undefined: the body is taken as sent
 * (no Content-Encoding other than identity), chunked being the only transfer coding.
 */
export function unreadableCoding(req: IncomingMessage): { field: string; problem: string } | undefined {
  const content = req.headers['content-encoding'];
  if (content !== undefined && content.trim().toLowerCase() !== 'identity') {
    return {
      field: 'Content-Encoding',
      problem: 'Send the request body uncompressed: no Content-Encoding is supported',
    };
  }
  const transfer = req.headers['transfer-encoding'];
  if (transfer !== undefined && transfer.trim().toLowerCase() !== 'chunked') {
    return { field: 'Transfer-Encoding', problem: 'Chunked is the only transfer coding supported' };
  }
  return undefined;
}
