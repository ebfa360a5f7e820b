/**
 * Every command of `payment-conformance`, as records, in the order `--help` lists them: the
 * modes (modes/index.ts), each followed by its other commands (run's `replay`), `repro` (of
 * a report of any mode), then the two commands about the suite itself: `adapter init` writes a starter adapter, `list`
 * prints every check of every mode.
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ADAPTER_TEMPLATE } from './adapters/template.ts';
import { CLAUSE_REGISTER_VERSION } from './core/clauses.ts';
import { SetupError } from './core/outcome.ts';
import { TOOL_VERSION } from './core/version.ts';
import { MODES } from './modes/index.ts';
import type { CommandRecord } from './runner/mode.ts';
import { reproCommand } from './repro.ts';

const adapterInit: CommandRecord<{ out: string; force: boolean }> = {
  group: { name: 'adapter', description: 'target adapters' },
  name: 'init',
  description:
    'write a commented starter adapter (an ES module Node loads as it is, typed with JSDoc), every capability stubbed',
  flags: [
    { flags: '--out <file>', description: 'where to write it', default: 'payment-adapter.mjs' },
    { flags: '--force', description: 'overwrite the file if it exists', default: false },
  ],
  run: (o, { out }) => {
    if (existsSync(o.out) && !o.force) throw new SetupError(`${o.out} exists; pass --force to overwrite it.`);
    writeFileSync(o.out, ADAPTER_TEMPLATE);
    out.write(`wrote ${o.out}: fill in what your implementation offers, then run\n`);
    out.write(
      `  npx --no -- payment-conformance run --base-url <url> --adapter ${path.isAbsolute(o.out) ? o.out : `./${o.out}`}\n`,
    );
    return 0;
  },
};

const list: CommandRecord<{ json?: boolean }> = {
  name: 'list',
  description: 'print every check of run, receiver and client: id, level, the clauses it enforces, title',
  flags: [
    {
      flags: '--json',
      description: 'print them as JSON, { tool, checks }: each check with its command, section and requires',
    },
  ],
  run: (o, { out }) => {
    const checks = MODES.flatMap((mode) => mode.checks().map((c) => ({ ...c, command: mode.name })));
    if (o.json) {
      const listed = checks.map((c) => ({
        id: c.id,
        command: c.command,
        level: c.level,
        clauses: c.clauses,
        section: c.section,
        title: c.title,
        requires: c.requires ?? [],
        ...(c.assumption ? { assumption: c.assumption } : {}),
      }));
      out.write(
        `${JSON.stringify({ tool: { name: 'payment-conformance', version: TOOL_VERSION, clauseRegisterVersion: CLAUSE_REGISTER_VERSION }, checks: listed }, null, 2)}\n`,
      );
      return 0;
    }
    const width = (f: (c: (typeof checks)[number]) => string) => Math.max(...checks.map((c) => f(c).length));
    const [wi, wl, wr] = [
      width((c) => c.id),
      width((c) => c.level),
      Math.min(
        48,
        width((c) => c.rule),
      ),
    ];
    for (const c of checks) out.write(`${c.id.padEnd(wi)}  ${c.level.padEnd(wl)}  ${c.rule.padEnd(wr)}  ${c.title}\n`);
    return 0;
  },
};

export const COMMANDS: readonly CommandRecord<never>[] = [
  ...MODES.flatMap((mode): CommandRecord<never>[] => [mode, ...(mode.also ?? [])]),
  reproCommand as CommandRecord<never>,
  adapterInit,
  list,
];
