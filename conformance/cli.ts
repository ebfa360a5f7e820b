#!/usr/bin/env node
/** The `payment-conformance` bin. */
import { TOOL_VERSION } from './core/version.ts';

const args = process.argv.slice(2);
if (args.length === 1 && args[0] === '--version') {
  // As commander prints it, without loading the suite: a version check (CI, `npx`) stays instant.
  process.stdout.write(`${TOOL_VERSION}\n`);
} else {
  const { main } = await import('./program.ts');
  const code = await main(args);
  // Exit once the output is flushed, without waiting for idle keep-alive sockets.
  process.stdout.write('', () => process.exit(code));
}
