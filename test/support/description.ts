/**
 * Loads the bundled descriptions from generated/ and validates values against their
 * schemas with ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { readExactly } from '../../server/http/openapi/formats.ts';

export type Json = Record<string, any>;

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function loadDescription(name: 'openapi' | 'sandbox'): Json {
  return JSON.parse(readFileSync(path.join(repoRoot, 'generated', `${name}.json`), 'utf8')) as Json;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** One ajv per description, the whole description registered so `#/components/...` refs resolve. */
export function createValidator(doc: Json, id: string) {
  const ajv = new Ajv2020({
    strict: false, // OpenAPI keywords (example, x-*) are not JSON Schema keywords
    allErrors: true,
  });
  // As the server reads them: `uri` a URL a browser can open, `multipleOf` on decimals
  // (19.99 / 0.01 is not an integer in binary floating point).
  readExactly(addFormats(ajv));
  ajv.addSchema(doc, id);
  const cache = new Map<string, ValidateFunction>();
  /** A validator for the schema at a JSON pointer of the description, e.g. `/components/schemas/Error`. */
  return (pointer: string): ValidateFunction => {
    let validate = cache.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `${id}#${pointer}` });
      cache.set(pointer, validate);
    }
    return validate;
  };
}

/** Resolves a local reference (`#/components/...`) of a bundled description. */
export function resolveRef(doc: Json, node: any): any {
  if (!node || typeof node !== 'object' || typeof node.$ref !== 'string') return node;
  return pointerGet(doc, node.$ref.slice(1));
}

export function pointerGet(doc: Json, pointer: string): any {
  return pointer
    .split('/')
    .slice(1)
    .reduce((at: any, key) => at?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}

export function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}
