/**
 * The `payment-server` command line: its flags, each also read from an environment
 * variable. Built apart from the command itself so that the server's README can list the
 * flags from this very definition.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { packageRoot } from './root.ts';

const { version } = JSON.parse(readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string };

function port(value: string): number {
  const n = Number(value);
  if (!/^\d{1,5}$/.test(value) || n > 65535) throw new InvalidArgumentError('expected a port number from 0 to 65535');
  return n;
}

function nonEmpty(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('must not be empty');
  return value;
}

function baseUrl(value: string): string {
  if (!URL.canParse(value) || !['http:', 'https:'].includes(new URL(value).protocol))
    throw new InvalidArgumentError('expected an absolute http:// or https:// URL');
  return value;
}

export const ENV = ['PORT', 'HOST', 'DATABASE_URL', 'SANDBOX_TOKEN', 'PUBLIC_URL', 'DOCS_URL'];
export function buildProgram(): Command {
  return new Command('payment-server')
    .description('Reference server of the payment service, with a sandbox API to drive payments, time and faults.')
    .version(version, '--version', 'print the version')
    .addOption(
      new Option('--port <port>', 'port to listen on (0 picks a free one)').env('PORT').default(4010).argParser(port),
    )
    .addOption(new Option('--host <host>', 'address to listen on').env('HOST').default('127.0.0.1').argParser(nonEmpty))
    .addOption(
      new Option(
        '--db <path>',
        'SQLite file path (in an existing folder), :memory:, or a postgres:// URL (any number of servers on one database)',
      )
        .env('DATABASE_URL')
        .default('.data/payment-service.sqlite')
        .argParser(nonEmpty),
    )
    .addOption(
      new Option(
        '--sandbox-token <token>',
        'bearer token of the sandbox API (random by default, kept in the database; on a non-loopback --host, required: 32 characters or more)',
      )
        .env('SANDBOX_TOKEN')
        .argParser(nonEmpty),
    )
    .addOption(new Option('--no-sandbox', 'turn the sandbox API off'))
    .addOption(
      new Option('--public-url <url>', 'base of hosted payment page URLs (default http://HOST:PORT)')
        .env('PUBLIC_URL')
        .argParser(baseUrl),
    )
    .addOption(
      new Option('--docs-url <url>', 'base of error.doc_url (default {public-url}/docs)')
        .env('DOCS_URL')
        .argParser(baseUrl),
    )
    .addHelpText(
      'after',
      `\nEach flag may also come from its environment variable (${ENV.join(', ')}); an empty one counts as unset.`,
    )
    .showHelpAfterError();
}

export interface CliOptions {
  port: number;
  host: string;
  db: string;
  sandboxToken?: string;
  sandbox: boolean;
  publicUrl?: string;
  docsUrl?: string;
}
