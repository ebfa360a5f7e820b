/**
 * Every mode, listed once, in the order `list` prints their checks: `run` checks an
 * implementation, `receiver` a merchant's webhook receiver, `client` an API client,
 * `traffic` recorded traffic of both parties. A mode is a folder of its own that exports
 * its record (mode.ts); the program, `list` and the clauses' traceability read them from here.
 */
import type { Mode } from '../runner/mode.ts';
import { clientMode } from './client/mode.ts';
import { receiverMode } from './receiver/mode.ts';
import { runMode } from './run/mode.ts';
import { trafficMode } from './traffic/mode.ts';

export const MODES: readonly Mode[] = [runMode, receiverMode, clientMode, trafficMode];
