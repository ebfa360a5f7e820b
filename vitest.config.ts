import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { measurePace } from './test/support/pace.ts';
import { ADMIN_URL, answers } from './test/support/postgres-server.ts';
import { LongestFirst } from './test/support/sequencer.ts';
import { outsideFast, testFiles } from './test/support/test-tags.ts';

const source = (file: string) => fileURLToPath(new URL(file, import.meta.url));

const root = fileURLToPath(new URL('.', import.meta.url));
const files = testFiles(root);
/** The server's tests that also run on PostgreSQL: those tagged `postgres` (test/support/test-tags.ts). */
const ON_POSTGRES = files.filter((f) => f.tags.includes('postgres')).map((f) => f.file);
/** `npm run test:fast` (TEST_FAST=1): every file but the slow, end-to-end, browser, packaging and registry ones. */
const OUTSIDE_FAST = process.env.TEST_FAST ? files.filter((f) => outsideFast(f.file, f.tags)).map((f) => f.file) : [];

// Whether PostgreSQL answers, decided once: without it its tests are skipped, said in
// one line; with REQUIRE_POSTGRES set (.ci/run sets it) its absence fails the run.
const postgres = (await answers(ADMIN_URL)) ? ADMIN_URL : null;
if (!postgres && process.env.REQUIRE_POSTGRES)
  throw new Error(`REQUIRE_POSTGRES is set but no PostgreSQL answers at ${ADMIN_URL}`);
// Vitest may read this file more than once in a run: the line is said once.
const said = Symbol.for('payment-service.postgres-skip-said');
if (!postgres && !(globalThis as Record<symbol, unknown>)[said]) {
  (globalThis as Record<symbol, unknown>)[said] = true;
  console.log(
    `PostgreSQL tests skipped (the PostgreSQL store, several servers on one database, the server's tests on PostgreSQL): nothing answers at ${ADMIN_URL}; start PostgreSQL there, or set TEST_POSTGRES_URL to one whose role may create databases.`,
  );
}
// The machine's pace, measured once a run (TEST_PACE gives it instead): every test-side
// bound, the defaults below and each test's own (test/support/pace.ts), stretches by it, so
// that a busy or slower machine is given the time it needs. The test processes inherit it.
process.env.TEST_PACE ??= String(await measurePace());
const pace = Math.max(1, Number(process.env.TEST_PACE) || 1);
const paceSaid = Symbol.for('payment-service.pace-said');
if (pace > 1 && !(globalThis as Record<symbol, unknown>)[paceSaid]) {
  (globalThis as Record<symbol, unknown>)[paceSaid] = true;
  console.log(
    `This machine runs at 1/${pace} of the pace of an idle one (other processes, or slower cores): the tests' time bounds are stretched ${pace} times (TEST_PACE=1 keeps them as written).`,
  );
}

export default defineConfig({
  // Tests run the packages' TypeScript sources, the client included, so that a change is
  // tested without a build; what a user installs (dist/) is tested by the packaging test
  // and by the tests that run the commands.
  resolve: {
    alias: [
      { find: /^@payment-service\/client$/, replacement: source('./client/index.ts') },
      { find: /^@payment-service\/client\/(webhooks|decimal)$/, replacement: source('./client/$1.ts') },
    ],
  },
  test: {
    testTimeout: 20_000 * pace,
    hookTimeout: 60_000 * pace,
    // A page or a server on a machine busy with the other test file may take longer than
    // the default second to get where a poll waits for it; a poll that never holds still fails.
    expect: { poll: { timeout: 10_000 * pace } },
    // Two files at a time: most of a file's time is waiting (webhook answers, the suite's
    // runs in child processes, the database), so the second core is not idle while one waits.
    maxWorkers: 2,
    // A worker keeps the modules it has loaded from one file to the next: loading the
    // server, the suite and the client again for each of some eighty files cost more than
    // many files' tests. No test may leave state behind: every server a file starts, it
    // closes; a variable of the environment it sets, it restores. The two projects still
    // run in workers of their own (their environments differ).
    isolate: false,
    sequence: { sequencer: LongestFirst },
    provide: { postgres },
    projects: [
      {
        extends: true as const,
        test: { name: 'main', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...OUTSIDE_FAST] },
      },
      ...(postgres
        ? [
            {
              extends: true as const,
              test: { name: 'server on PostgreSQL', include: ON_POSTGRES, env: { TEST_STORE: 'postgres' } },
            },
          ]
        : []),
    ],
  },
});
