/**
 * `payment-server` (npm start): runs the reference server with the flags of the design
 * (each also read from its environment variable), prints where it listens and, when it
 * created one, the demo organisation's test credentials. Stops cleanly on SIGINT/SIGTERM.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { createPaymentServer } from './app.ts';

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
  if (!URL.canParse(value) || !['http:', 'https:'].includes(new URL(value).protocol)) throw new InvalidArgumentError('expected an absolute http:// or https:// URL');
  return value;
}

const ENV = ['PORT', 'HOST', 'DATABASE_URL', 'SANDBOX_TOKEN', 'PUBLIC_URL', 'DOCS_URL'];
// An empty variable counts as unset (HOST= must not mean every interface, nor PORT= a random port).
for (const name of ENV) if (process.env[name]?.trim() === '') delete process.env[name];

const program = new Command('payment-server')
  .description('Reference server of the payment service, with a sandbox API to drive payments, time and faults.')
  .addOption(new Option('--port <port>', 'port to listen on (0 picks a free one)').env('PORT').default(4010).argParser(port))
  .addOption(new Option('--host <host>', 'address to listen on').env('HOST').default('127.0.0.1').argParser(nonEmpty))
  .addOption(new Option('--db <path>', 'SQLite file path, or :memory:').env('DATABASE_URL').default('.data/payment-service.sqlite').argParser(nonEmpty))
  .addOption(new Option('--sandbox-token <token>', 'bearer token of the sandbox API (random by default)').env('SANDBOX_TOKEN').argParser(nonEmpty))
  .addOption(new Option('--no-sandbox', 'turn the sandbox API off'))
  .addOption(new Option('--public-url <url>', 'base of hosted payment page URLs (default http://HOST:PORT)').env('PUBLIC_URL').argParser(baseUrl))
  .addOption(new Option('--docs-url <url>', 'base of error.doc_url (default {public-url}/docs)').env('DOCS_URL').argParser(baseUrl))
  .addHelpText('after', `\nEach flag may also come from its environment variable (${ENV.join(', ')}); an empty one counts as unset.`)
  .showHelpAfterError();

program.parse();
const opts = program.opts<{ port: number; host: string; db: string; sandboxToken?: string; sandbox: boolean; publicUrl?: string; docsUrl?: string }>();
// A token given on the command line with --no-sandbox is a contradiction; one from SANDBOX_TOKEN is not.
if (!opts.sandbox && program.getOptionValueSource('sandboxToken') === 'cli') program.error("error: option '--sandbox-token <token>' cannot be used with option '--no-sandbox'");

if (opts.db.startsWith('postgres://') || opts.db.startsWith('postgresql://')) {
  console.error('payment-server: PostgreSQL is not supported yet; use a SQLite file path or :memory:.');
  process.exit(2);
}

// A signal during start-up is honoured as soon as the server is up, never lost.
let stopRequested = false;
let stop = () => {
  stopRequested = true;
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop());

const server = await createPaymentServer({
  port: opts.port,
  host: opts.host,
  db: opts.db,
  sandboxToken: opts.sandbox ? opts.sandboxToken : false,
  publicUrl: opts.publicUrl,
  docsUrl: opts.docsUrl,
  demo: true,
}).catch((error: unknown) => {
  console.error(`payment-server: could not start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(2);
});

console.log(`payment-server listening on ${server.url}`);
if (server.demo) {
  const { id, webhookSigningSecret, apiKeys } = server.demo;
  console.log(`demo organisation ${id} (NZD, card and open banking enabled, settlement account)`);
  console.log(`  test clientId:     ${apiKeys.test.clientId}`);
  console.log(`  test clientSecret: ${apiKeys.test.clientSecret}`);
  console.log(`  webhook secret:    ${webhookSigningSecret}`);
}
if (server.sandboxToken) console.log(`sandbox token: ${server.sandboxToken}`);
else console.log('sandbox API: off');
console.log(`docs: ${server.docsUrl}/ (error codes: ${server.docsUrl}/errors/)`);

stop = () => {
  server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
if (stopRequested) stop();
