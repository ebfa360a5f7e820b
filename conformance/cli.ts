#!/usr/bin/env node
/** The `payment-conformance` bin. */
import { main } from './program.ts';

const code = await main(process.argv.slice(2));
// Exit once the output is flushed, without waiting for idle keep-alive sockets.
process.stdout.write('', () => process.exit(code));
