/**
 * Coverage of the service document's Events by the bundled description
 * (generated/openapi.json): every webhook field the document states is present, each
 * webhook file under openapi/webhooks/ reaches the bundle, and the webhooks that name an
 * event are the known members of the open `WebhookEventType`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createValidator, loadDescription, repoRoot, resolveRef, type Json } from './support/description.ts';

const doc = loadDescription('openapi');
const schemaAt = createValidator(doc, 'openapi-events.json');
const schemas = doc.components.schemas as Json;

describe('webhooks (Events)', () => {
  const completed = doc.webhooks['checkout_session.completed'].post;
  const legacy = doc.webhooks.legacyTransaction.post;

  it('describes checkout_session.completed with the five payload fields', () => {
    const payload = resolveRef(doc, completed.requestBody.content['application/json'].schema);
    expect(payload.required.sort()).toEqual([
      'checkoutSessionId',
      'createdAt',
      'event',
      'foreignTransactionId',
      'transactionId',
    ]);
    const validate = schemaAt('/components/schemas/WebhookEvent');
    const event = {
      event: 'checkout_session.completed',
      createdAt: '2026-01-01T00:00:00Z',
      checkoutSessionId: 'cs_1',
      transactionId: '0b8f7d0e-3f1c-4a5e-9d2a-6c1b2e3f4a5b',
      foreignTransactionId: null,
    };
    expect(validate(event)).toBe(true);
    expect(validate({ ...event, checkoutSessionId: null })).toBe(true);
    expect(validate({ ...event, event: 'checkout_session.refunded' })).toBe(true);
    expect(validate({ ...event, transactionId: 'not-a-uuid' })).toBe(false);
  });

  it('documents the Service-Signature header and the signing scheme', () => {
    const header = completed.parameters.find((p: any) => p.name === 'Service-Signature');
    expect(header.in).toBe('header');
    expect(header.description).toMatch(/t=<unix_seconds>,v1=<hex_digest>/);
    expect(completed.description).toMatch(
      /HMAC-SHA256, hex encoded, over the string `<t>` \+ `\.` \+ the raw request body bytes/,
    );
    expect(completed.description).toMatch(/no `Service-Signature` header at all/);
  });

  it('documents the receiver verification steps', () => {
    for (const step of [
      /first `=`/,
      /exact raw bytes/,
      /constant time/,
      /older than five minutes/,
      /Only after the check passes/,
    ]) {
      expect(completed.description).toMatch(step);
    }
  });

  it('documents the retry behaviour per rail', () => {
    expect(completed['x-delivery']).toEqual({
      timeoutSeconds: 5,
      signatureToleranceSeconds: 300,
      attempts: { card: 3, open_banking: 1 },
      finalStatuses: '4xx other than 408 and 429',
    });
    for (const rule of [
      /Any 2xx status/,
      /five seconds/,
      /up to three attempts in total/,
      /one attempt, no retry/,
      /other than 408 or 429/,
      /Deduplicate on `transactionId`/,
    ]) {
      expect(completed.description).toMatch(rule);
    }
  });

  it('describes the legacy two-field body, unsigned', () => {
    const validate = schemaAt('/components/schemas/LegacyWebhookPayload');
    expect(validate({ transactionId: '9a1e2b3c-4d5e-4f60-8a7b-1c2d3e4f5a6b', foreignTransactionId: 'legacy-7' })).toBe(
      true,
    );
    expect(
      validate({
        transactionId: '9a1e2b3c-4d5e-4f60-8a7b-1c2d3e4f5a6b',
        foreignTransactionId: null,
        event: 'checkout_session.completed',
      }),
    ).toBe(false);
    expect(legacy.parameters ?? []).toEqual([]);
  });

  it('bundles every webhook of openapi/webhooks/, and keys each event by a name WebhookEventType knows', () => {
    // A file not keyed under `webhooks:` in openapi.yaml is in no bundle, and nothing else says so.
    const folder = path.join(repoRoot, 'openapi/webhooks');
    const written = readdirSync(folder)
      .filter((file) => file.endsWith('.yaml'))
      .map((file) => /^\s+operationId:\s*(\S+)/m.exec(readFileSync(path.join(folder, file), 'utf8'))?.[1]);
    const bundled = Object.values<any>(doc.webhooks).map((w) => w.post.operationId);
    expect(written.filter((id) => !bundled.includes(id))).toEqual([]);
    // The legacy body names no event; every other webhook is keyed by the event it is for.
    const events = Object.entries<any>(doc.webhooks)
      .filter(([, w]) => resolveRef(doc, w.post.requestBody.content['application/json'].schema).properties?.event)
      .map(([name]) => name);
    const known = schemas.WebhookEventType.anyOf.find((s: any) => s.enum).enum;
    expect(events.sort()).toEqual([...known].sort());
  });

  it('keeps the event set open', () => {
    expect(schemas.WebhookEventType.anyOf.some((s: any) => s.type === 'string' && !s.enum)).toBe(true);
  });
});
