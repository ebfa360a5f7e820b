/**
 * Every request and response body of both descriptions has an example, and every
 * example (media-type examples and schema-level `examples`) validates against its schema.
 */
import { describe, expect, it } from 'vitest';
import { createValidator, escapePointer, loadDescription, pointerGet, type Json } from './support/description.ts';

interface Sample {
  where: string;
  schemaPointer: string;
  value: unknown;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Follows a `$ref` to the pointer of its target, so schemas are validated where they live. */
function follow(doc: Json, pointer: string): string {
  const node = pointerGet(doc, pointer);
  return node && typeof node.$ref === 'string' ? follow(doc, node.$ref.slice(1)) : pointer;
}

/** A body's examples: the media type's `examples` map (refs followed) and `example`. */
function mediaSamples(doc: Json, mediaPointer: string, where: string): Sample[] {
  const media = pointerGet(doc, mediaPointer);
  const schemaPointer = `${mediaPointer}/schema`;
  const samples: Sample[] = [];
  if (media.example !== undefined) samples.push({ where, schemaPointer, value: media.example });
  for (const name of Object.keys(media.examples ?? {})) {
    const target = pointerGet(doc, follow(doc, `${mediaPointer}/examples/${escapePointer(name)}`));
    samples.push({ where: `${where} example "${name}"`, schemaPointer, value: target.value });
  }
  return samples;
}

/** Every body (request and response) of every operation, webhooks included. */
function bodies(doc: Json): Array<{ where: string; mediaPointer: string }> {
  const found: Array<{ where: string; mediaPointer: string }> = [];
  for (const section of ['paths', 'webhooks']) {
    for (const route of Object.keys(doc[section] ?? {})) {
      const itemPointer = follow(doc, `/${section}/${escapePointer(route)}`);
      for (const method of METHODS) {
        const opPointer = `${itemPointer}/${method}`;
        const op = pointerGet(doc, opPointer);
        if (!op) continue;
        const label = `${method.toUpperCase()} ${route}`;
        if (op.requestBody) {
          const body = follow(doc, `${opPointer}/requestBody`);
          for (const media of Object.keys(pointerGet(doc, body).content ?? {})) {
            found.push({ where: `${label} request ${media}`, mediaPointer: `${body}/content/${escapePointer(media)}` });
          }
        }
        for (const status of Object.keys(op.responses ?? {})) {
          const response = follow(doc, `${opPointer}/responses/${status}`);
          for (const media of Object.keys(pointerGet(doc, response).content ?? {})) {
            found.push({
              where: `${label} ${status} ${media}`,
              mediaPointer: `${response}/content/${escapePointer(media)}`,
            });
          }
        }
      }
    }
  }
  return found;
}

function schemaSamples(doc: Json): Sample[] {
  return Object.entries<any>(doc.components?.schemas ?? {}).flatMap(([name, schema]) =>
    (schema.examples ?? []).map((value: unknown, i: number) => ({
      where: `schema ${name} examples[${i}]`,
      schemaPointer: `/components/schemas/${escapePointer(name)}`,
      value,
    })),
  );
}

for (const name of ['openapi', 'sandbox'] as const) {
  describe(`examples of generated/${name}.json`, () => {
    const doc = loadDescription(name);
    const validator = createValidator(doc, `${name}.json`);
    const allBodies = bodies(doc);
    const samples = [...allBodies.flatMap((b) => mediaSamples(doc, b.mediaPointer, b.where)), ...schemaSamples(doc)];

    it('gives every request and response body an example', () => {
      expect(allBodies.length).toBeGreaterThan(5);
      const missing = allBodies.filter(
        (b) =>
          mediaSamples(doc, b.mediaPointer, b.where).length === 0 &&
          !pointerGet(doc, `${b.mediaPointer}/schema`)?.examples,
      );
      expect(missing.map((b) => b.where)).toEqual([]);
    });

    it.each(samples.map((s) => [s.where, s] as const))('%s validates against its schema', (_where, sample) => {
      const validate = validator(sample.schemaPointer);
      const ok = validate(sample.value);
      expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
      expect(ok).toBe(true);
    });
  });
}

describe('the example check itself', () => {
  const doc = loadDescription('openapi');
  const validator = createValidator(doc, 'openapi-check.json');

  it("accepts 19.99 and rejects 1.005 for multipleOf 0.01, as the document's two-decimal rule says", () => {
    const total = validator('/components/schemas/AmountTotal');
    expect(total(19.99)).toBe(true);
    expect(total(0.07)).toBe(true);
    expect(total(4.35)).toBe(true);
    expect(total(1.005)).toBe(false);
    // Within a tolerance of a whole cent, but more than two decimals all the same.
    expect(total(1e-10)).toBe(false);
    expect(total(0.30000000000000004)).toBe(false);
  });

  it('rejects an example that breaks its schema', () => {
    const session = validator('/components/schemas/CheckoutSession');
    const example = structuredClone(doc.components.schemas.CheckoutSession.examples[0]);
    expect(session(example)).toBe(true);
    delete example.transactionType;
    expect(session(example)).toBe(false);
  });
});
