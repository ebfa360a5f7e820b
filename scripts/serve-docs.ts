/**
 * `npm start` for now: serves the built docs (dist/docs) on http://127.0.0.1:4010/docs/.
 * PORT and HOST override the address. Stops on SIGINT/SIGTERM.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDocsServer } from './docs-server.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const server = await startDocsServer({
  dir: path.join(root, 'dist/docs'),
  host: process.env.HOST ?? '127.0.0.1',
  port: Number(process.env.PORT ?? 4010),
});
console.log(`docs at ${server.url}/docs/ (errors: ${server.url}/docs/errors/, sandbox: ${server.url}/docs/sandbox/)`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void server.close().then(() => process.exit(0)));
}
