/**
 * The clause register against the service document and the checks: every clause stands
 * in SERVICE.md under its anchor, right before its words; every clause is judged by a
 * check or says why it cannot be; every check cites clauses that exist.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createRegistry } from '../../conformance/modes/run/checks/index.ts';
import { CLAUSES, clause } from '../../conformance/core/clauses.ts';
import { receiverChecks } from '../../conformance/modes/receiver/checks/index.ts';
import { Registry } from '../../conformance/runner/registry.ts';
import { traceability } from '../../conformance/traceability.ts';
import { clauseTextFile } from '../../scripts/clause-text.ts';

const service = readFileSync(new URL('../../SERVICE.md', import.meta.url), 'utf8');

describe('the clause register', () => {
  it('has unique ids, each an anchor in SERVICE.md right before the clause’s own words', () => {
    expect(new Set(CLAUSES.map((c) => c.id)).size).toBe(CLAUSES.length);
    const missing = CLAUSES.filter((c) => !service.includes(`<a id="${c.id}"></a>${c.words}`)).map((c) => c.id);
    expect(missing).toEqual([]);
  });

  it('names every anchor of SERVICE.md, and nothing else', () => {
    const anchors = [...service.matchAll(/<a id="([^"]+)"><\/a>/g)].map((m) => m[1]);
    expect(anchors.sort()).toEqual(CLAUSES.map((c) => c.id).sort());
  });

  it('leaves no clause without a check or a reason it cannot be checked from outside', () => {
    const { gaps, checkable, notCheckable } = traceability();
    expect(gaps).toEqual([]);
    expect(checkable + notCheckable).toBe(CLAUSES.length);
  });

  it('has every run and receiver check cite at least one clause of the register', () => {
    const checks = [
      ...createRegistry().all(),
      ...receiverChecks({ url: 'https://receiver.invalid/', secret: 'whsec_x', legacy: undefined }),
    ];
    for (const check of checks) {
      expect(check.clauses.length, check.id).toBeGreaterThan(0);
      for (const id of check.clauses) expect(() => clause(id), `${check.id} cites ${id}`).not.toThrow();
    }
  });

  it('refuses a check that cites no clause, an unknown clause, or one registered as not checkable', () => {
    const base = { section: 'Limits', title: 'a check', run: async () => undefined };
    expect(() => new Registry().register({ ...base, id: 'ABC-001', clauses: [] })).toThrow(/cites no clause/);
    expect(() => new Registry().register({ ...base, id: 'ABC-002', clauses: ['no.such'] })).toThrow(/No clause/);
    expect(() => new Registry().register({ ...base, id: 'ABC-003', clauses: ['verify.constant-time'] })).toThrow(
      /not checkable/,
    );
  });

  it('sets a check’s level from what it cites: must clauses make a must check, a rule of ours an assumption', () => {
    const base = { section: 'Limits', title: 'a check', run: async () => undefined };
    const registry = new Registry().register(
      { ...base, id: 'ABC-001', clauses: ['limit.total'] },
      { ...base, id: 'ABC-002', clauses: ['idem.replay'], assumption: 'identical means the same JSON value' },
      { ...base, id: 'ABC-003', clauses: ['sig.format'], level: 'should' },
    );
    expect(registry.all().map((c) => [c.id, c.level, c.rule])).toEqual([
      ['ABC-001', 'must', 'limit.total'],
      ['ABC-002', 'assumption', 'idem.replay'],
      ['ABC-003', 'should', 'sig.format'],
    ]);
    // Only checks that rely on a rule of ours are assumptions.
    for (const check of createRegistry().all())
      expect(check.level === 'assumption', check.id).toBe(Boolean(check.assumption));
  });

  it('takes its words from SERVICE.md alone, its version raised when they change and kept when not', () => {
    const committed = readFileSync(new URL('../../conformance/core/clause-text.ts', import.meta.url), 'utf8');
    const versionOf = (file: string) => /CLAUSE_REGISTER_VERSION = '(\d+)'/.exec(file)?.[1];
    expect(clauseTextFile(service, committed, 'marker')).toBe(committed.replace(/^\/\/ .*\n/, '// marker\n'));
    const reworded = service.replace('Always `single`', 'Always `single` or `multi`');
    const next = clauseTextFile(reworded, committed, 'marker');
    expect(versionOf(next)).toBe(String(Number(versionOf(committed)) + 1));
    expect(next).toContain('"create.type", "type | body | string | yes | Always `single` or `multi`"');
    expect(clauseTextFile(reworded, next, 'marker')).toBe(next);
  });
});
