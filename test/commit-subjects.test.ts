/**
 * `npm run lint:commits` as CI runs it: quiet on this history, and failing a clone whose
 * newest commit breaks the convention (a long subject, or a body with no blank line).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from './support/description.ts';

const script = path.join(repoRoot, 'scripts/commit-subjects.ts');
const tsx = path.join(repoRoot, 'node_modules/.bin/tsx');
const scratch = mkdtempSync(path.join(tmpdir(), 'commit-subjects-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const lint = (cwd: string) => spawnSync(tsx, [script], { cwd, encoding: 'utf8' });

function cloneWith(name: string, message: string): string {
  const dir = path.join(scratch, name);
  execFileSync('git', ['clone', '-q', repoRoot, dir]);
  execFileSync(
    'git',
    ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', 'commit', '-q', '--allow-empty', '-m', message],
    { cwd: dir },
  );
  return dir;
}

describe('commit messages', () => {
  it('every commit of this history since the convention fits it', () => {
    const run = lint(repoRoot);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/every subject fits/);
  });

  it('a subject over 72 characters fails, naming the commit and the length', () => {
    const subject = 'Judge any 2xx status as a delivery, and every other status as a failed one, retried';
    const run = lint(cloneWith('long', subject));
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`the subject is ${subject.length} characters (at most 72)`);
  });

  it('a body that starts on the second line fails', () => {
    const run = lint(cloneWith('no-blank', 'Judge any 2xx as a delivery\nbecause the document says any 2xx'));
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('not followed by a blank line');
  });
});
