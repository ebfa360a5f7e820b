/**
 * Bundles the `payment-server` command into server/dist/bundle/: payment-server.js, which
 * its bin (server/bin/payment-server.js) runs, and the chunks it loads once its flags are
 * read (the server; the PostgreSQL store only for a postgres:// database), so that
 * `--version` and `--help` parse no more than the command line. `npm run build` makes it
 * after `tsc -b`.
 *
 * Why: run from dist/cli.js, a start spends most of its time in Node's ES module loader,
 * resolving, reading and compiling some three hundred files one by one (the server's and
 * its libraries'); a few files are read and compiled at once (figures in bench/README.md). The
 * library entry (dist/app.js) stays as tsc writes it.
 *
 * Left out of the bundle: native and optional modules (better-sqlite3's addon, pg's
 * optional native binding and Cloudflare socket), and pino-pretty, loaded only when a
 * person reads the log in a terminal. The background thread's worker stays its own file
 * (dist/background/worker.js), found from the package's root.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const server = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../server');

// Chunks are named by their content: those of an earlier build would otherwise linger.
rmSync(path.join(server, 'dist/bundle'), { recursive: true, force: true });
await build({
  entryPoints: [path.join(server, 'dist/cli.js')],
  outdir: path.join(server, 'dist/bundle'),
  entryNames: 'payment-server',
  bundle: true,
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['better-sqlite3', 'pg-native', 'cloudflare:sockets', 'pino-pretty'],
  // The libraries written as CommonJS call `require`, which an ES module lacks.
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  // Names stay as written, so a stack trace still reads; whitespace and syntax shrink.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'linked',
  logLevel: 'warning',
});
