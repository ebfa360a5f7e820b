/**
 * The traffic report DIR/conformance.ndjson: the entries of the HAR report
 * (reporters/har.ts), one JSON object a line, in the order the exchanges began, for tools
 * that read a line at a time (jq, a log shipper) rather than one document.
 */
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Redactor } from '../core/redact.ts';
import { credentialsOf, type TrafficEntry } from '../core/traffic.ts';
import { harEntry } from './har.ts';
import type { ReporterRecord } from './reporter.ts';

export function writeNdjsonReport(entries: readonly TrafficEntry[], redactor: Redactor, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'conformance.ndjson');
  // A line at a time: tens of thousands of them are never one string.
  const credentials = credentialsOf(entries);
  const fd = openSync(file, 'w');
  try {
    for (const e of entries) writeSync(fd, `${JSON.stringify(harEntry(e, redactor, credentials.get(e)))}\n`);
  } finally {
    closeSync(fd);
  }
  return file;
}

export const ndjsonReporter = {
  name: 'ndjson',
  write: (_report, dir, traffic) => (traffic ? writeNdjsonReport(traffic.entries(), traffic.redactor, dir) : undefined),
} as const satisfies ReporterRecord;
