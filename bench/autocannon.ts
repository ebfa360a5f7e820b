/**
 * autocannon, typed here (only the parts the benchmark uses): the package ships no types,
 * and a narrow surface keeps what the runner relies on in one place.
 */
import type { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';

export interface AcRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (request: AcRequest, context: Record<string, unknown>) => AcRequest;
  onResponse?: (
    status: number,
    body: string,
    context: Record<string, unknown>,
    headers: Record<string, unknown>,
  ) => void;
}

interface AcOptions {
  url: string;
  connections: number;
  duration: number;
  timeout?: number;
  requests: AcRequest[];
}

/** The parts of autocannon's result read here (latencies and rates are taken per answer instead). */
interface AcResult {
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodeStats: Record<string, { count: number }>;
}

type AcInstance = EventEmitter & PromiseLike<AcResult>;
export const autocannon = createRequire(import.meta.url)('autocannon') as (options: AcOptions) => AcInstance;
