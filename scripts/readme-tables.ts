/**
 * The reference tables of the package READMEs, written from their sources so that they
 * cannot drift: the server's flags (server/cli-program.ts), the suite's `run` and `replay`
 * flags (conformance/program.ts), its checks and the capabilities they need (the registry), and
 * the client's methods and options (client/client.ts, its declarations). Each table sits between
 * `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` in its README, laid out by the
 * formatter that `npm test` holds every file to (Biome).
 *
 *   npm run readme            rewrite the tables
 *   npm run readme -- --check fail (exit 1) when a README's table is stale
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command, Option } from 'commander';
import ts from 'typescript';
import { CAPABILITIES, type Capability, MODELLED_STAND_INS } from '../conformance/adapter.ts';
import { CLAUSE_REGISTER_VERSION, CLAUSES, wordsOf } from '../conformance/clauses.ts';
import type { RegisteredCheck } from '../conformance/runner/check-definition.ts';
import { createRegistry } from '../conformance/modes/run/checks/index.ts';
import { createClientRegistry } from '../conformance/modes/client/checks/index.ts';
import { traceability } from '../conformance/traceability.ts';
import { buildProgram as conformanceProgram } from '../conformance/program.ts';
import { buildProgram as serverProgram } from '../server/cli-program.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * A table cell: pipes escaped, one line, and `*` escaped outside code spans, so that a glob
 * in help text ("IDEM-*,AUTH-003") is not read as emphasis.
 */
const cell = (text: string) =>
  text
    .replace(/\|/g, '\\|')
    .replace(/\n/g, ' ')
    .split('`')
    .map((part, i) => (i % 2 === 0 ? part.replace(/\*/g, '\\*') : part))
    .join('`');
const code = (text: string) => `\`${text}\``;

function table(header: string[], rows: string[][]): string {
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n');
}

function defaultOf(option: Option): string {
  if (option.mandatory) return '(required)';
  if (option.defaultValue === undefined || option.defaultValue === false) return '';
  return code(String(option.defaultValue));
}

function flagsTable(command: Command, withEnv: boolean): string {
  const options = command.options.filter((o) => o.long !== '--help' && o.long !== '--version');
  const header = withEnv ? ['flag', 'env', 'default', 'meaning'] : ['flag', 'default', 'meaning'];
  const rows = options.map((o) => {
    const row = [code(o.flags), defaultOf(o), o.description];
    if (withEnv) row.splice(1, 0, o.envVar ? code(o.envVar) : '');
    return row;
  });
  return table(header, rows);
}

function checksTable(checks: ReadonlyArray<RegisteredCheck<unknown>> = createRegistry().all()): string {
  const sections = [...new Set(checks.map((c) => c.section))];
  return sections
    .map((section) => {
      const rows = checks
        .filter((c) => c.section === section)
        .map((c) => [c.id, c.level, c.rule, c.title, (c.requires ?? []).join(', ')]);
      return `**${section}** (${rows.length})\n\n${table(['id', 'level', 'clauses', 'title', 'requires'], rows)}`;
    })
    .join('\n\n');
}

/** What each capability lets the suite do, for the capability table. */
const CAPABILITY_USE: Record<Capability, string> = {
  createOrganisation:
    'organisations of their own (with --config profiles instead, the checks that change an organisation cannot run)',
  createApiKey: 'a key to delete (unknown_api_key)',
  deleteApiKey: 'unknown_api_key after a key is removed',
  rotateWebhookSecret: 'rotation of the signing secret, with deliveries in flight',
  advanceClock: 'token expiry, session expiry, the 24-hour idempotency memory, the card rail’s retries',
  attempt: 'completion, declines, redirects and every webhook',
  webhookDeliveries: 'that nothing is sent (on decline, expiry, without webhookUrl), and what the target recorded',
  injectFault: 'a retry after a committed 500, unsigned deliveries',
  paymentLinks:
    'payment links in the target’s own shape (without it, the modelled POST /api/payment-links, skipping these checks when refused)',
  legacyTransactions:
    'legacy transactions made the target’s own way (without it, the modelled POST /api/transaction, skipping these checks when refused)',
};

/**
 * Each capability's checks: those that need it; for one the modelled requests stand in for,
 * which no check needs, those that use it when offered.
 */
function capabilityTable(): string {
  const checks = createRegistry().all();
  const rows = CAPABILITIES.map((capability) => {
    const ids = checks
      .filter((c) => (MODELLED_STAND_INS.includes(capability) ? c.uses : c.requires)?.includes(capability))
      .map((c) => c.id);
    return [code(capability), String(ids.length), CAPABILITY_USE[capability], ids.join(', ')];
  });
  const free = checks.filter((c) => (c.requires ?? []).length === 0).length;
  return `${table(['capability', 'checks', 'what it checks', 'check ids'], rows)}\n\n${free} of ${checks.length} checks need no capability: organisations (made or from --config profiles) are enough.`;
}

/**
 * Each clause of the register with what judges it: the `run` checks and the `receiver`
 * checks citing it, or why nothing can from outside.
 */
function traceabilityTable(): string {
  const { checkable, notCheckable, judgedBy } = traceability();
  const sections = [...new Set(CLAUSES.map((c) => c.section))];
  const body = sections
    .map((section) => {
      const rows = CLAUSES.filter((c) => c.section === section).map((c) => [
        `[${c.id}](SERVICE.md#${c.id})`,
        c.strength,
        c.subject,
        wordsOf(c),
        c.notCheckable ? `not checkable from outside: ${c.notCheckable}` : (judgedBy.get(c.id) ?? []).join(', '),
      ]);
      return `**${section}**\n\n${table(['clause', 'strength', 'duty of', 'words', 'checks'], rows)}`;
    })
    .join('\n\n');
  return `${CLAUSES.length} clauses (register version ${CLAUSE_REGISTER_VERSION}): ${checkable} judged by checks, ${notCheckable} not checkable from outside.\n\n${body}`;
}

/**
 * The members of an interface of a source file, from its declarations: how each is called
 * and its doc comment, so the README says what the types say.
 */
function interfaceTable(file: string, name: string, kind: 'method' | 'option'): string {
  const source = ts.createSourceFile(file, readFileSync(path.join(root, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const found = source.statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name,
  );
  if (!found) throw new Error(`${file} declares no interface ${name}`);
  const members = [...(found.heritageClauses ?? [])]
    .flatMap((h) => h.types.map((t) => t.expression.getText(source)))
    .flatMap((base) => {
      const inherited = source.statements.find(
        (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === base,
      );
      return inherited ? [...inherited.members] : [];
    })
    .concat([...found.members]);
  const doc = (member: ts.Node) =>
    ts
      .getJSDocCommentsAndTags(member)
      .map((d) => ts.getTextOfJSDocComment(d.comment) ?? '')
      .join(' ')
      .replace(/\s+/g, ' ')
      .trim();
  const rows = members.map((member) => {
    const memberName = member.name?.getText(source) ?? '';
    if (kind === 'option') {
      const type = ts.isPropertySignature(member) && member.type ? member.type.getText(source) : '';
      return [code(memberName), code(type), doc(member)];
    }
    if (ts.isMethodSignature(member)) {
      const params = member.parameters.map((p) => `${p.name.getText(source)}${p.questionToken ? '?' : ''}`).join(', ');
      return [code(`${memberName}(${params})`), code(member.type?.getText(source) ?? ''), doc(member)];
    }
    const type = ts.isPropertySignature(member) && member.type ? member.type.getText(source) : '';
    return [code(memberName), code(type), doc(member)];
  });
  return table(kind === 'option' ? ['option', 'type', 'meaning'] : ['member', 'returns', 'what it does'], rows);
}

/** The sandbox API's operations, from its description: the fixed outline other tools rely on. */
function sandboxTable(): string {
  const doc = JSON.parse(readFileSync(path.join(root, 'generated/sandbox.json'), 'utf8')) as {
    paths: Record<string, Record<string, { summary?: string }>>;
  };
  const rows = Object.entries(doc.paths).flatMap(([route, item]) =>
    Object.entries(item)
      .filter(([method]) => ['get', 'post', 'delete', 'put', 'patch'].includes(method))
      .map(([method, op]) => [code(`${method.toUpperCase()} ${route}`), op.summary ?? '']),
  );
  return table(['operation', 'what it does'], rows);
}

function conformanceCommand(name: string): Command {
  const command = conformanceProgram(() => {}).commands.find((c) => c.name() === name);
  if (!command) throw new Error(`payment-conformance has no ${name} command`);
  return command;
}

const tables: Array<{ readme: string; name: string; render: () => string }> = [
  { readme: 'server/README.md', name: 'flags', render: () => flagsTable(serverProgram(), true) },
  { readme: 'server/README.md', name: 'sandbox', render: sandboxTable },
  { readme: 'conformance/README.md', name: 'run-flags', render: () => flagsTable(conformanceCommand('run'), false) },
  {
    readme: 'conformance/README.md',
    name: 'replay-flags',
    render: () => flagsTable(conformanceCommand('replay'), false),
  },
  { readme: 'conformance/README.md', name: 'capabilities', render: capabilityTable },
  { readme: 'conformance/README.md', name: 'checks', render: () => checksTable() },
  { readme: 'conformance/README.md', name: 'client-checks', render: () => checksTable(createClientRegistry().all()) },
  { readme: 'conformance/README.md', name: 'traceability', render: traceabilityTable },
  {
    readme: 'client/README.md',
    name: 'methods',
    render: () => interfaceTable('client/client.ts', 'PaymentClient', 'method'),
  },
  {
    readme: 'client/README.md',
    name: 'call-options',
    render: () => interfaceTable('client/client.ts', 'CreateOptions', 'option'),
  },
  {
    readme: 'client/README.md',
    name: 'client-options',
    render: () => interfaceTable('client/client.ts', 'PaymentClientOptions', 'option'),
  },
];

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const stale: string[] = [];
  for (const readme of new Set(tables.map((t) => t.readme))) {
    const file = path.join(root, readme);
    const before = await readFile(file, 'utf8');
    let after = before;
    for (const t of tables.filter((x) => x.readme === readme)) {
      const start = `<!-- generated:${t.name} -->`;
      const end = `<!-- /generated:${t.name} -->`;
      const from = after.indexOf(start);
      const to = after.indexOf(end);
      if (from < 0 || to < from) throw new Error(`${readme}: no ${start} … ${end} block`);
      after = `${after.slice(0, from + start.length)}\n${t.render()}\n${after.slice(to)}`;
    }
    after = execFileSync(path.join(root, 'node_modules/.bin/biome'), ['format', `--stdin-file-path=${file}`], {
      input: after,
      encoding: 'utf8',
    });
    if (after === before) continue;
    if (check) stale.push(readme);
    else await writeFile(file, after);
  }
  if (stale.length > 0) {
    console.error(`stale tables in ${stale.join(', ')}: run \`npm run readme\` and commit the result.`);
    process.exitCode = 1;
  }
}

await main();
