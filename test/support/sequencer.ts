/**
 * The order test files start in. Two run at a time, so a long file that starts last keeps
 * the run going long after the other worker has finished: longest first is the order that
 * keeps both busy to the end. Vitest knows each file's last duration once it has run here
 * (its cache); a fresh clone has none, so the files known to be long come first, in this
 * order, and the rest follow, the larger first.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Files that each take ten seconds or more, the longest first. */
export const LONG_FILES = [
  'test/e2e/conformance-exploration.test.ts',
  'test/e2e/conformance-clause-mutants.test.ts',
  'test/e2e/conformance-adapters.test.ts',
  'test/e2e/conformance-legal.test.ts',
  'test/packaging.test.ts',
  'test/e2e/multi-instance.test.ts',
  'test/e2e/docs.browser.test.ts',
  'test/e2e/conformance.test.ts',
  'test/server/cli.test.ts',
  'test/e2e/conformance-mutants.test.ts',
  'test/readme-tour.test.ts',
  'test/e2e/conformance-receiver.test.ts',
  'test/e2e/conformance-client.test.ts',
  'test/e2e/conformance-second-implementation.test.ts',
  'test/server/webhook-crash.test.ts',
  'test/server/delivery-store-failures.test.ts',
  'test/server/webhooks.test.ts',
  'test/server/large-fields.test.ts',
  'test/e2e/hosted-page.browser.test.ts',
];

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const key = (file: TestSpecification) => `${file.project.name}:${relative(root, file.moduleId)}`;
    const rank = (file: TestSpecification) => {
      const at = LONG_FILES.indexOf(relative(root, file.moduleId));
      return at === -1 ? LONG_FILES.length : at;
    };
    const last = (file: TestSpecification) => this.ctx.cache.getFileTestResults(key(file))?.duration;
    const size = (file: TestSpecification) => this.ctx.cache.getFileStats(key(file))?.size ?? 0;
    // Both projects' files in one queue: the PostgreSQL run of the server's tests fills the
    // gaps rather than waiting for the whole main project.
    return [...files].sort((a, b) => {
      const [da, db] = [last(a), last(b)];
      if (da !== undefined && db !== undefined) return db - da;
      return rank(a) - rank(b) || size(b) - size(a);
    });
  }
}
