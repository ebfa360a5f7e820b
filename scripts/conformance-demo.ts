/**
 * `npm run conformance:demo`: starts the reference server (its own CLI, in-memory
 * database, a fresh sandbox token) and runs the whole conformance suite against it,
 * printing the console report and writing every report to reports/conformance/.
 * Extra arguments are passed to `payment-conformance run` (e.g. `-- --only 'HOOK-*'`).
 *
 * A run of the whole suite, with no extra argument, also writes what it measured
 * (test/measured/conformance-run.md: the verdict, the time, the description coverage and
 * the exploration's pace, with the date, the suite's version and the machine), which the
 * test documentation links rather than copying figures by hand.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type DescriptionCoverage, shortfallText } from '../conformance/core/description-coverage.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The machine's load when the run starts: the figures are only as good as the machine was quiet.
const loadAtStart = os.loadavg()[0]!;
const sandboxToken = `sbx_demo_${randomBytes(12).toString('hex')}`;

const server = spawn(
  process.execPath,
  [path.join(root, 'server/dist/cli.js'), '--port', '0', '--db', ':memory:', '--sandbox-token', sandboxToken],
  {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);

const baseUrl = await new Promise<string>((resolve, reject) => {
  const lines = createInterface({ input: server.stdout! });
  lines.on('line', (line) => {
    const match = /^payment-server listening on (\S+)/.exec(line);
    if (match) resolve(match[1]!);
  });
  server.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening`)));
});

const suite = spawn(
  process.execPath,
  [
    path.join(root, 'conformance/dist/cli.js'),
    'run',
    '--base-url',
    baseUrl,
    '--sandbox-token',
    sandboxToken,
    '--reporter',
    'console,json,junit,html',
    '--out',
    'reports/conformance',
    ...process.argv.slice(2),
  ],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
const [code] = (await once(suite, 'exit')) as [number | null];
server.kill('SIGTERM');
await once(server, 'exit');
if (process.argv.length === 2) writeMeasured(code);
process.exit(code ?? 2);

interface Report {
  tool: { version: string; clauseRegisterVersion: string };
  startedAt: string;
  durationMs: number;
  summary: Record<string, number>;
  coverage: { must: { judged: number; total: number } };
  descriptionCoverage?: DescriptionCoverage;
  results: Array<{ id: string; status: string; reason: string }>;
}

/** What the whole run measured, for the test documentation to link. */
function writeMeasured(exitCode: number | null): void {
  const report = JSON.parse(readFileSync(path.join(root, 'reports/conformance/conformance.json'), 'utf8')) as Report;
  const { summary, descriptionCoverage: d } = report;
  const counts = Object.entries(summary)
    .map(([status, n]) => `${n} ${status}`)
    .join(', ');
  const explored = report.results
    .filter((r) => r.id.startsWith('EXPL-'))
    .map((r) => `- ${r.id} (${r.status}): ${r.reason}`);
  const cpus = os.cpus();
  const lines = [
    '<!-- Written by `npm run conformance:demo` (scripts/conformance-demo.ts). Do not edit: run it again. -->',
    '',
    '# The whole suite against the reference server',
    '',
    `Measured ${report.startedAt.slice(0, 10)} with payment-conformance ${report.tool.version} (clause register ${report.tool.clauseRegisterVersion}) on Node ${process.version}, ${cpus.length} CPUs (${cpus[0]?.model.trim() ?? 'unknown'}, load average ${loadAtStart.toFixed(1)} at the start): \`payment-conformance run\` with the sandbox adapter and every default (\`--explore 10\`, \`--concurrency 8\`), against \`payment-server\` on an in-memory database, both on this machine.`,
    '',
    `- exit status ${exitCode}: ${counts}; ${report.coverage.must.judged} of ${report.coverage.must.total} must checks judged`,
    `- time: ${(report.durationMs / 1000).toFixed(1)} s`,
    ...(d ? [`- description coverage: ${shortfallText(d)}`] : []),
    ...explored,
    '',
  ];
  mkdirSync(path.join(root, 'test/measured'), { recursive: true });
  writeFileSync(path.join(root, 'test/measured/conformance-run.md'), lines.join('\n'));
}
