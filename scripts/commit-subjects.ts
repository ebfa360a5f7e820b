/**
 * `npm run lint:commits`: every commit since the history adopted the convention has a
 * subject of at most 72 characters, one line, then a blank line before any body, so that
 * `git log --oneline` reads as a list of changes. Earlier commits are history and stay as
 * they are. A clone without those commits (a shallow one) checks what it has.
 */
import { execFileSync } from 'node:child_process';

/** The last commit before the convention: everything after it is held to it. */
const ADOPTED_AFTER = 'd5b0332c';
const MAX_SUBJECT = 72;

const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });

function range(): { revisions: string; from: string } {
  try {
    git('cat-file', '-e', `${ADOPTED_AFTER}^{commit}`);
    return { revisions: `${ADOPTED_AFTER}..HEAD`, from: `since ${ADOPTED_AFTER}` };
  } catch {
    return { revisions: 'HEAD', from: 'in this shallow clone' };
  }
}
const { revisions, from } = range();

// %x00 ends each message, so that bodies with any text split cleanly.
const messages = git('log', '--format=%h%x01%B%x00', revisions)
  .split('\0')
  .map((entry) => entry.replace(/^\n/, ''))
  .filter((entry) => entry.includes('\x01'));

const problems: string[] = [];
for (const entry of messages) {
  const [hash, message = ''] = entry.split('\x01');
  const [subject = '', second] = message.split('\n');
  if (subject.length > MAX_SUBJECT)
    problems.push(`${hash}: the subject is ${subject.length} characters (at most ${MAX_SUBJECT}): ${subject}`);
  if (subject.trim() === '') problems.push(`${hash}: no subject`);
  if (second !== undefined && second.trim() !== '')
    problems.push(`${hash}: the subject is not followed by a blank line: ${subject}`);
  if (/\.\s*$/.test(subject)) problems.push(`${hash}: the subject ends with a full stop: ${subject}`);
}

if (problems.length > 0) {
  process.stderr.write(
    `Commit messages: a subject of at most ${MAX_SUBJECT} characters in the imperative ("Judge any 2xx as a delivery"), a blank line, then why, in the body.\n${problems.join('\n')}\n`,
  );
  process.exit(1);
}
process.stdout.write(`${messages.length} commits ${from}: every subject fits.\n`);
