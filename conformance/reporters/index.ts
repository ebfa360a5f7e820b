/**
 * Every reporter, listed once, in the order `--reporter` names them and their files are
 * written: the console follows the run; the others write a file each into `--out`.
 */
import { consoleReporter } from './console.ts';
import { harReporter } from './har.ts';
import { htmlReporter } from './html.ts';
import { jsonReporter } from './json.ts';
import { junitReporter } from './junit.ts';
import { ndjsonReporter } from './ndjson.ts';
import type { ReporterRecord } from './reporter.ts';

export const REPORTERS = [
  consoleReporter,
  jsonReporter,
  junitReporter,
  htmlReporter,
  harReporter,
  ndjsonReporter,
] as const satisfies readonly ReporterRecord[];

/** A name `--reporter` takes. */
export type ReporterName = (typeof REPORTERS)[number]['name'];

export const REPORTER_NAMES: readonly ReporterName[] = REPORTERS.map((r) => r.name);
