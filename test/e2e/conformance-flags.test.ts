/**
 * The flags `run`, `receiver` and `client` take alike are read by one module
 * (conformance/runner/flags.ts): a bad value is a usage error (exit 2) with the same words
 * whichever command it was given to, before anything is sent. Nothing listens at the
 * addresses given: each command must stop at its flags.
 */
import { describe, expect, it } from 'vitest';
import { cli } from '../support/conformance-cli.ts';

const NOWHERE = 'http://127.0.0.1:9';
const COMMANDS: Record<'run' | 'receiver' | 'client', string[]> = {
  run: ['run', '--base-url', NOWHERE, '--sandbox-token', 'sbx_flags'],
  receiver: ['receiver', '--url', `${NOWHERE}/hooks`, '--secret', 'whsec_flags'],
  client: ['client', '--base-url', NOWHERE, '--sandbox-token', 'sbx_flags', '--driver', 'true'],
};

const rows: Array<{ flags: string[]; commands: Array<keyof typeof COMMANDS>; says: string }> = [
  { flags: ['--only', 'NOPE-*'], commands: ['run', 'receiver', 'client'], says: '--only NOPE-*: no check id matches.' },
  {
    flags: ['--reporter', 'console,yaml'],
    commands: ['run', 'receiver', 'client'],
    says: '--reporter: unknown yaml (choose from console, json, junit, html, har, ndjson).',
  },
  {
    flags: ['--concurrency', '0'],
    commands: ['run', 'client'],
    says: '--concurrency must be a whole number of at least 1.',
  },
  {
    flags: ['--seed', '4294967296'],
    commands: ['run', 'client'],
    says: '--seed must be a whole number from 0 to 4294967295.',
  },
  {
    flags: ['--settle-timeout', '601'],
    commands: ['run', 'receiver'],
    says: '--settle-timeout must be from 1 to 600 seconds.',
  },
];

describe('the flags every mode shares', () => {
  for (const row of rows) {
    it(`${row.flags.join(' ')} is the same usage error for ${row.commands.join(', ')}`, async () => {
      for (const command of row.commands) {
        const run = await cli([...COMMANDS[command], ...row.flags]);
        expect(run.code, `${command}: ${run.stderr}`).toBe(2);
        expect(run.stderr).toBe(`payment-conformance: ${row.says}\n`);
      }
    });
  }
});
