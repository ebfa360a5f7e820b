/**
 * The traffic report DIR/conformance.har: every exchange of the run as an HTTP Archive 1.2
 * (http://www.softwareishard.com/blog/har-12-spec/), which browsers' developer tools, proxies
 * and API tools open. Each entry carries the check that made or received it in `_checkId`
 * and what kind of exchange it was in `_kind` (the format allows fields of one's own when
 * they start with an underscore). Every secret is redacted by the run's redactor, as in
 * every other report.
 */
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import path from 'node:path';
import type { Redactor } from '../core/redact.ts';
import { type Credentials, credentialsOf, type TrafficEntry, type TrafficKind } from '../core/traffic.ts';
import { TOOL_VERSION } from '../core/version.ts';
import type { ReporterRecord } from './reporter.ts';

interface NameValue {
  name: string;
  value: string;
}

export interface HarEntry {
  startedDateTime: string;
  time: number;
  request: {
    method: string;
    url: string;
    httpVersion: string;
    cookies: NameValue[];
    headers: NameValue[];
    queryString: NameValue[];
    postData?: { mimeType: string; text: string; comment?: string; _cut?: true };
    headersSize: number;
    bodySize: number;
  };
  response: {
    status: number;
    statusText: string;
    httpVersion: string;
    cookies: NameValue[];
    headers: NameValue[];
    content: { size: number; mimeType: string; text: string; comment?: string; _cut?: true };
    redirectURL: string;
    headersSize: number;
    bodySize: number;
  };
  cache: Record<string, never>;
  timings: { send: number; wait: number; receive: number };
  _checkId: string;
  _kind: TrafficKind;
  /** Why no answer came (the response then has status 0, as browsers record a request that got none). */
  _error?: string;
  /** client: who gave the client its answer. */
  _answeredBy?: string;
  /** The clientId the request's credentials belong to, when the traffic shows it (core/traffic.ts, credentialsOf). */
  _client?: string;
  /** A fingerprint of the token the request carries or its answer issued (no secret: core/traffic.ts). */
  _token?: string;
}

export interface Har {
  log: { version: '1.2'; creator: { name: string; version: string }; entries: HarEntry[] };
}

const headerOf = (headers: Record<string, string>, name: string) =>
  Object.entries(headers).find(([n]) => n.toLowerCase() === name)?.[1];

/** One exchange as a HAR entry, every secret replaced by its placeholder ($TOKEN, $CLIENT_SECRET...). */
export function harEntry(e: TrafficEntry, redactor: Redactor, credentials: Credentials = {}): HarEntry {
  const url = redactor.text(e.request.url);
  const headers = (h: Record<string, string>) => redactor.headers(h).map(([name, value]) => ({ name, value }));
  const time = Math.max(0, e.durationMs ?? 0);
  const answer = e.response;
  const answerText = answer === undefined ? '' : redactor.text(answer.body);
  return {
    startedDateTime: new Date(e.startedAt).toISOString(),
    time,
    request: {
      method: e.request.method,
      url,
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: headers(e.request.headers),
      queryString: URL.canParse(url) ? [...new URL(url).searchParams].map(([name, value]) => ({ name, value })) : [],
      ...(e.request.body !== undefined && e.request.body !== ''
        ? {
            postData: {
              mimeType: headerOf(e.request.headers, 'content-type') ?? '',
              text: redactor.text(e.request.body),
              ...(e.request.bodySize !== undefined
                ? {
                    comment: `the first ${Buffer.byteLength(e.request.body)} bytes of ${e.request.bodySize}`,
                    _cut: true,
                  }
                : {}),
            },
          }
        : {}),
      headersSize: -1,
      bodySize: e.request.bodySize ?? Buffer.byteLength(e.request.body ?? ''),
    },
    response: {
      status: answer?.status ?? 0,
      statusText: answer === undefined ? '' : (STATUS_CODES[answer.status] ?? ''),
      httpVersion: answer === undefined ? '' : 'HTTP/1.1',
      cookies: [],
      headers: answer === undefined ? [] : headers(answer.headers),
      content: {
        // The whole size even when the text is only its start (`_cut`), as HAR means it.
        size: answer === undefined ? 0 : (answer.bodySize ?? Buffer.byteLength(answer.body)),
        mimeType: (answer && headerOf(answer.headers, 'content-type')) ?? '',
        text: answerText,
        ...(answer?.bodySize !== undefined
          ? { comment: `the first ${Buffer.byteLength(answer.body)} bytes of ${answer.bodySize}`, _cut: true }
          : {}),
      },
      redirectURL: '',
      headersSize: -1,
      bodySize: answer === undefined ? -1 : (answer.bodySize ?? Buffer.byteLength(answer.body)),
    },
    cache: {},
    // Only the whole time is measured: it is the wait, sending and receiving counted in it.
    timings: { send: 0, wait: time, receive: 0 },
    _checkId: e.checkId,
    _kind: e.kind,
    ...(e.error !== undefined ? { _error: redactor.text(e.error) } : {}),
    ...(e.answeredBy !== undefined ? { _answeredBy: e.answeredBy } : {}),
    ...(credentials.client !== undefined ? { _client: credentials.client } : {}),
    ...(credentials.token !== undefined ? { _token: credentials.token } : {}),
  };
}

export function harOf(entries: readonly TrafficEntry[], redactor: Redactor): Har {
  const credentials = credentialsOf(entries);
  return {
    log: {
      version: '1.2',
      creator: { name: 'payment-conformance', version: TOOL_VERSION },
      entries: entries.map((e) => harEntry(e, redactor, credentials.get(e))),
    },
  };
}

export function writeHarReport(entries: readonly TrafficEntry[], redactor: Redactor, dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'conformance.har');
  // Written an entry at a time, so that tens of thousands of them are never one string; compact,
  // since HAR readers need no indentation. The same document as JSON.stringify(harOf(...)).
  const credentials = credentialsOf(entries);
  const fd = openSync(file, 'w');
  try {
    const head = JSON.stringify({ version: '1.2', creator: { name: 'payment-conformance', version: TOOL_VERSION } });
    writeSync(fd, `{"log":${head.slice(0, -1)},"entries":[`);
    for (const [i, e] of entries.entries())
      writeSync(fd, `${i === 0 ? '' : ','}${JSON.stringify(harEntry(e, redactor, credentials.get(e)))}`);
    writeSync(fd, ']}}\n');
  } finally {
    closeSync(fd);
  }
  return file;
}

export const harReporter = {
  name: 'har',
  write: (_report, dir, traffic) => (traffic ? writeHarReport(traffic.entries(), traffic.redactor, dir) : undefined),
} as const satisfies ReporterRecord;
