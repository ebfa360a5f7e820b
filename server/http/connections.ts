/**
 * How many client connections the server holds at once, from the process's descriptor
 * limit. Every connection is a descriptor, and so is whatever a request opens on its way:
 * an open-banking payment's webhook is sent while its request waits, so one connection
 * can hold two. Past the limit, accept() and every open fail with EMFILE: the store, the
 * webhook deliveries and the next client alike. So the clients get at most half the
 * limit less a reserve (Node closes a connection over the cap as soon as it is
 * accepted), and the rest stays for the requests' own deliveries, the store (SQLite's
 * files or PostgreSQL's pool of 10), the queued deliveries, the worker thread, DNS and
 * the logs.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Descriptors kept out of the clients' half: the store, queued deliveries, DNS, logs, the runtime's own. */
const RESERVE = 64;
/** The cap never falls below this, however low the limit: a server that takes no connection is no use. */
const FLOOR = 16;

/**
 * The soft RLIMIT_NOFILE as the process has it now (Node raises the soft limit to the hard
 * one as it starts), or undefined when it is unlimited or cannot be read.
 */
export function descriptorLimit(): number | undefined {
  try {
    // Linux: "Max open files   <soft>   <hard>   files".
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    if (line) return parseLimit(line.slice('Max open files'.length).trim().split(/\s+/)[0]!);
  } catch {
    // Not Linux: ask a shell, which inherits the limit.
  }
  try {
    return parseLimit(execFileSync('/bin/sh', ['-c', 'ulimit -n'], { encoding: 'utf8', timeout: 2000 }).trim());
  } catch {
    return undefined;
  }
}

function parseLimit(text: string): number | undefined {
  return /^\d+$/.test(text) ? Number(text) : undefined;
}

/** The most client connections to hold with this many descriptors: half, less the reserve. */
export function connectionCap(limit: number | undefined = descriptorLimit()): number | undefined {
  return limit === undefined ? undefined : Math.max(FLOOR, Math.floor(limit / 2) - RESERVE);
}
