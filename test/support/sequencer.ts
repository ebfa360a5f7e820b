/**
 * The order test files start in. Two run at a time, so a long file that starts last keeps
 * the run going long after the other worker has finished: longest first is the order that
 * keeps both busy to the end. Vitest knows each file's last duration once it has run here
 * (its cache); a fresh clone has none, so the files tagged `long` come first
 * (test/support/test-tags.ts), and within each group the larger first.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { tagsOf } from './test-tags.ts';

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const key = (file: TestSpecification) => `${file.project.name}:${relative(root, file.moduleId)}`;
    // Each file's tags read once, not at every comparison of the sort.
    const long = new Set(files.filter((f) => tagsOf(f.moduleId).includes('long')).map((f) => f.moduleId));
    const rank = (file: TestSpecification) => (long.has(file.moduleId) ? 0 : 1);
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
