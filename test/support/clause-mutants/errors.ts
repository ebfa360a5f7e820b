/**
 * The clause mutants of the service document's Errors and Versioning sections (see
 * ../clause-mutants.ts).
 */
import { type ClauseMutant, json, isApi, codeOf, envelope, answers } from './kit.ts';

export const errorClauseMutants: ClauseMutant[] = [
  // ---- Errors ----
  {
    clauses: ['err.message'],
    name: 'errors have no message',
    api: answers(
      (_m, r) => Boolean(codeOf(r)),
      ({ error: { message: _, ...e } }) => ({ error: e }),
    ),
  },
  {
    clauses: ['err.param'],
    name: 'param is left out when no single field is to blame',
    api: answers(
      (_m, r) => Boolean(codeOf(r)) && json(r).error.param === null,
      ({ error: { param: _, ...e } }) => ({ error: e }),
    ),
  },
  {
    clauses: ['err.doc-url'],
    name: 'doc_url points at one page for every code',
    api: answers(
      (_m, r) => Boolean(codeOf(r)),
      (b) => ({ error: { ...b.error, doc_url: String(b.error.doc_url).replace(/#.*$/, '#errors') } }),
    ),
  },
  {
    clauses: ['err.details'],
    name: 'currency_mismatch carries an empty details list',
    api: answers(
      (_m, r) => codeOf(r) === 'currency_mismatch',
      (b) => ({ error: { ...b.error, details: [] } }),
    ),
  },
  {
    clauses: ['err.details-entry'],
    name: 'details constraints are a list of messages',
    api: answers(
      (_m, r) => codeOf(r) === 'validation_failed',
      (b) => ({
        error: {
          ...b.error,
          details: b.error.details.map((d: any) => ({ ...d, constraints: Object.values(d.constraints) })),
        },
      }),
    ),
  },
  // ---- Versioning ----
  {
    clauses: ['ver.unversioned'],
    name: 'every endpoint wants an Api-Version header',
    api: {
      request: (m) => (isApi(m) && !m.headers['api-version'] ? envelope(400, 'validation_failed', 'Api-Version') : m),
    },
  },
];
