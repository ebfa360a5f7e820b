/**
 * The project's own lint rules (redocly/conventions.js), run through Redocly CLI as
 * `npm run lint:spec` runs them: each fires on the fixture that breaks its convention,
 * and none fires on a compliant description.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './support/description.ts';

const run = promisify(execFile);
const fixtures = path.join(repoRoot, 'test/fixtures/lint');

type Problem = { ruleId: string; message: string };
const reports = new Map<string, Promise<Problem[]>>();

/** Lints a fixture once; the rule checks below read the same report. */
function lint(file: string): Promise<Problem[]> {
  if (!reports.has(file)) reports.set(file, runLint(file));
  return reports.get(file)!;
}

async function runLint(file: string): Promise<Problem[]> {
  const args = ['lint', '--config', path.join(fixtures, 'redocly.yaml'), '--format=json', path.join(fixtures, file)];
  // redocly exits 1 when it finds errors; the JSON report is on stdout either way.
  const { stdout } = await run(path.join(repoRoot, 'node_modules/.bin/redocly'), args, { cwd: repoRoot }).catch(
    (e) => e,
  );
  return JSON.parse(stdout).problems;
}

describe('convention lint rules', () => {
  it('finds nothing in a compliant description (token endpoint and webhooks exempt)', async () => {
    expect(await lint('compliant.yaml')).toEqual([]);
  });

  it.each([
    ['conventions/operation-requires-bearer', 'Operation readWithoutAuth must require a bearer scheme.'],
    ['conventions/operation-requires-bearer', 'Operation readWithoutAuth must document 401 with the error envelope.'],
    ['conventions/operation-requires-bearer', 'Operation createWithoutKey must document 401 with the error envelope.'],
    [
      'conventions/error-responses-use-envelope',
      'createWithoutKey 401 must use the error envelope { error: { code, message, param, doc_url } }.',
    ],
    [
      'conventions/create-documents-idempotency-key',
      'Create operation createWithoutKey must document the Idempotency-Key header.',
    ],
    ['conventions/media-type-has-example', 'Every request and response body needs an example.'],
    [
      'conventions/assumption-marked',
      'x-assumption: true needs a description saying **Assumption:** what was modelled.',
    ],
    ['conventions/assumption-marked', 'A description saying **Assumption:** needs x-assumption: true beside it.'],
  ])('%s reports: %s', async (ruleId, message) => {
    const problems = await lint('violations.yaml');
    expect(problems).toContainEqual(expect.objectContaining({ ruleId, message }));
  });
});
