#!/usr/bin/env node
/**
 * `payment-server` (npm start): runs the reference server with its flags (a fixed interface: server/README.md, "Flags")
 * (each also read from its environment variable), prints where it listens and the demo
 * organisation's test credentials (made on the first start, kept in the database).
 * Stops cleanly on SIGINT/SIGTERM.
 */
import { buildProgram, type CliOptions, ENV } from './cli-program.ts';
import { databaseServerOf } from './store/open.ts';

// The start lines are for whoever reads them; a reader that went away (the output piped
// into `head`) is no reason to stop serving.
process.stdout.on('error', () => undefined);

// An empty variable counts as unset (HOST= must not mean every interface, nor PORT= a random port).
for (const name of ENV) if (process.env[name]?.trim() === '') delete process.env[name];

const program = buildProgram();
program.parse();
const opts = program.opts<CliOptions>();
// A token given on the command line with --no-sandbox is a contradiction; one from SANDBOX_TOKEN is not.
if (!opts.sandbox && program.getOptionValueSource('sandboxToken') === 'cli')
  program.error("error: option '--sandbox-token <token>' cannot be used with option '--no-sandbox'");

// A signal during start-up is honoured as soon as the server is up, never lost.
let stopRequested = false;
let stop = () => {
  stopRequested = true;
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop());

// The server is loaded only now: --version, --help and a refused flag answer without it.
const { createPaymentServer } = await import('./app.ts');
const server = await createPaymentServer({
  port: opts.port,
  host: opts.host,
  // Only the default's folder (.data/) is made: a missing folder in a path given is likely a typo.
  db: program.getOptionValueSource('db') === 'default' ? undefined : opts.db,
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
  const { id, webhookSigningSecret, apiKeys, created } = server.demo;
  console.log(`demo organisation ${id} (NZD, card and open banking enabled, settlement account)`);
  console.log(`  test clientId:     ${apiKeys.test.clientId}`);
  console.log(`  test clientSecret: ${apiKeys.test.clientSecret}`);
  console.log(`  webhook secret:    ${webhookSigningSecret}`);
  const databaseServer = databaseServerOf(opts.db);
  if (databaseServer) {
    // The URL may hold a password: it is never printed.
    console.log(`  ${created ? 'created now and kept' : 'kept'} in the ${databaseServer} database`);
  } else if (opts.db !== ':memory:') {
    console.log(
      `  ${created ? 'created now and kept' : 'kept'} in ${opts.db}; to start afresh, stop the server and delete ${opts.db}*`,
    );
  }
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
