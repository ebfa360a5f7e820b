/**
 * The suite's own version, from its package.json: reports carry it beside the clause
 * register's version, so a result can be traced to the tool and the document it came from.
 */
import { readFileSync } from 'node:fs';

function read(): string {
  // From the sources the package.json is one folder up (core/); from dist/core/ two.
  for (const relative of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === '@payment-service/conformance' && pkg.version) return pkg.version;
    } catch {
      // not this one
    }
  }
  return '0.0.0';
}

export const TOOL_VERSION = read();
