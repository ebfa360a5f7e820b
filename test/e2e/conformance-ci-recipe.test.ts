/**
 * The CI recipes of the conformance README cannot drift: their YAML is read from the
 * README, the check step of each (GitHub Actions and GitLab CI) is the same command, and
 * that command is run by bash, as a runner would, against the reference server, with the
 * suite installed in a scratch project. The install step itself needs the package on a
 * registry; installing from the tarball is the packaging test's.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot } from '../support/description.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';

const run = promisify(execFile);
const readme = readFileSync(path.join(repoRoot, 'conformance/README.md'), 'utf8');
const ciSection = readme.slice(readme.indexOf('## In CI'), readme.indexOf('## `run` flags'));
const yamlBlocks = [...ciSection.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => parse(m[1]!));

let t: TestServer;
let project: string;
beforeAll(async () => {
  t = await startTestServer({ webhookPollIntervalMs: 25 });
  // A project where the suite is installed: its packages linked from this repository.
  project = mkdtempSync(path.join(tmpdir(), 'ci-recipe-'));
  mkdirSync(path.join(project, 'node_modules/@payment-service'), { recursive: true });
  mkdirSync(path.join(project, 'node_modules/.bin'));
  for (const [name, dir] of [
    ['conformance', 'conformance'],
    ['client', 'client'],
    ['contract', 'generated'],
  ])
    symlinkSync(path.join(repoRoot, dir!), path.join(project, 'node_modules/@payment-service', name!));
  // The bin as npm installs it: an executable that runs the package's cli.js.
  writeFileSync(
    path.join(project, 'node_modules/.bin/payment-conformance'),
    `#!/bin/sh\nexec "${process.execPath}" "${path.join(repoRoot, 'conformance/dist/cli.js')}" "$@"\n`,
    { mode: 0o755 },
  );
});
afterAll(async () => {
  await t?.close();
  if (project) rmSync(project, { recursive: true, force: true });
});

it('GitHub Actions and GitLab CI run the same check step, which passes against the reference server and keeps both reports', async () => {
  expect(yamlBlocks).toHaveLength(2);
  const [github, gitlab] = yamlBlocks as [any, any];
  const steps = github.jobs.conformance.steps as Array<{ name?: string; run?: string; with?: any }>;
  const githubCheck = steps.find((s) => s.name === 'Check the test environment')!.run!;
  const gitlabCheck = (gitlab.conformance.script as string[]).find((line) => line.includes('payment-conformance run'))!;
  expect(gitlabCheck).toBe(githubCheck);
  expect(githubCheck).toContain('--require-capabilities all');
  // The artifacts kept are where the step writes its reports.
  expect(steps.find((s) => s.with?.path)!.with.path).toBe('reports/conformance');
  expect(gitlab.conformance.artifacts.reports.junit).toBe('reports/conformance/conformance.junit.xml');

  const { stdout } = await run('bash', ['-c', githubCheck], {
    cwd: project,
    env: { ...process.env, NO_COLOR: '1', TARGET_URL: t.url, SANDBOX_TOKEN },
    maxBuffer: 16 * 1024 * 1024,
  });
  expect(stdout).toContain('PASSED: no must check failed');
  expect(stdout.trim().split('\n').at(-1)).toMatch(/^(\d+) of \1 must checks judged$/);
  for (const file of ['conformance.junit.xml', 'conformance.html'])
    expect(existsSync(path.join(project, 'reports/conformance', file)), file).toBe(true);
}, 180_000);
