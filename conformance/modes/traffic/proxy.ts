/**
 * `payment-conformance proxy --target URL`: a recording reverse proxy between any client and
 * any implementation. Each request goes on as it came (method, path and query, headers but
 * the hop-by-hop ones, Host the target's, body bytes) and each answer comes back as it came,
 * streamed. Each exchange is kept, to bounds, as `traffic` reads one from a file (read.ts).
 *
 * As each exchange ends, the traffic checks that one exchange decides alone judge it, and
 * the first failure of each is printed; the checks about sequences (a client's tokens, its
 * retries, its keys) wait for the end. When the proxy stops (SIGINT, SIGTERM or --duration)
 * every traffic check judges what was kept, and the reports are written (command.ts).
 *
 * Requests under `/webhooks/` are deliveries a service sends to a merchant: with --receiver
 * they go to the receiver and are judged as deliveries, its answers recorded with them;
 * without it they go to the target like every other request.
 */
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import pc from 'picocolors';
import { shellWord } from '../../core/http.ts';
import { CheckFailure, failsRun, type Output, SetupError } from '../../core/outcome.ts';
import { Redactor } from '../../core/redact.ts';
import type { TrafficEntry } from '../../core/traffic.ts';
import { FLAGS, integer, outOf, reportersOf, selectChecks } from '../../runner/flags.ts';
import type { CommandRecord } from '../../runner/mode.ts';
import { createTrafficRegistry } from './checks/index.ts';
import { judgeTraffic } from './command.ts';
import { jsonOf, named, TrafficRun } from './context.ts';
import { type Observed, roleOf } from './read.ts';

export interface ProxyOptions {
  target: string;
  /** HOST:PORT; port 0 takes any free one. */
  listen?: string;
  /** Stop after this many seconds; undefined or 0: on a signal only. */
  durationS?: number;
  receiver?: string;
  webhookSecret?: string;
  maxExchanges?: number;
  maxBody?: number;
  only?: string;
  reporter?: string;
  out?: string;
  strictAssumptions?: boolean;
  /** Stops the proxy as a signal does: for a caller that runs it in its own process. */
  signal?: AbortSignal;
}

export const DEFAULT_LISTEN = '127.0.0.1:4020';
export const DEFAULT_MAX_EXCHANGES = 10_000;
export const DEFAULT_MAX_BODY = 64 * 1024;

/**
 * The traffic checks one exchange decides alone: its answer against the description, the
 * token endpoint's answer, a delivery's body and signature, a request's form. Every other
 * check reads a sequence, which only the end of the traffic holds whole.
 */
const DECIDED_BY_ONE = new Set([
  'TRAFFIC-001',
  'TRAFFIC-002',
  'TRAFFIC-003',
  'TRAFFIC-004',
  'TRAFFIC-005',
  'TRAFFIC-006',
  'TRAFFIC-007',
  'TRAFFIC-008',
  'TRAFFIC-020',
  'TRAFFIC-021',
  'TRAFFIC-022',
  'TRAFFIC-030',
  'TRAFFIC-031',
  'TRAFFIC-036',
  'TRAFFIC-038',
]);

/** Headers of one connection, not of the message passed on (RFC 9110, 7.6.1), and those a proxy speaks by. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** How long requests still on their way may take to finish once the proxy stops listening. */
const DRAIN_MS = 5000;

const isDeliveryPath = (pathname: string) => pathname === '/webhooks' || pathname.startsWith('/webhooks/');

function httpUrl(flag: string, value: string): URL {
  if (!URL.canParse(value)) throw new SetupError(`${flag} ${value}: not a URL.`);
  const url = new URL(value);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new SetupError(`${flag} ${value}: an http:// or https:// URL is needed.`);
  return url;
}

function listenOf(value: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d+)$/.exec(value);
  const port = Number(match?.[3]);
  if (!match || port > 65535)
    throw new SetupError(`--listen ${value}: expected HOST:PORT (127.0.0.1:4020; port 0 takes any free port).`);
  return { host: (match[1] ?? match[2])!, port };
}

const isLoopback = (host: string) => /^(127\.\d+\.\d+\.\d+|::1|localhost)$/i.test(host);

/** The header lines passed on, hop-by-hop ones left out and Host replaced when given; and as the record keeps them. */
function passedOn(raw: readonly string[], host?: string): { lines: string[]; headers: Record<string, string> } {
  const named = new Set<string>();
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]!.toLowerCase() === 'connection')
      for (const token of raw[i + 1]!.split(',')) named.add(token.trim().toLowerCase());
  const lines: string[] = host === undefined ? [] : ['Host', host];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || named.has(lower) || (host !== undefined && lower === 'host')) continue;
    lines.push(name, raw[i + 1]!);
  }
  const headers: Record<string, string> = {};
  for (let i = 0; i < lines.length; i += 2) {
    const lower = lines[i]!.toLowerCase();
    headers[lower] = headers[lower] === undefined ? lines[i + 1]! : `${headers[lower]}, ${lines[i + 1]}`;
  }
  return { lines, headers };
}

/** A body's first `limit` bytes, and its whole size. */
class BodyStart {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  size = 0;

  constructor(private readonly limit: number) {}

  add(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.kept >= this.limit) return;
    const part = chunk.subarray(0, this.limit - this.kept);
    // A copy, so that the record never holds on to a larger buffer the chunk is a view of.
    this.chunks.push(Buffer.from(part));
    this.kept += part.length;
  }

  get whole(): boolean {
    return this.kept === this.size;
  }

  /**
   * The body as text, decoded when it was sent compressed (the rules read JSON, not gzip);
   * undefined when it cannot be: cut short, an unknown coding, or more than `limit` once decoded.
   */
  text(coding: string | undefined): string | undefined {
    const bytes = Buffer.concat(this.chunks);
    if (!this.whole) return undefined;
    const options = { maxOutputLength: Math.max(this.limit, 1) };
    const name = (coding ?? '').trim().toLowerCase();
    try {
      if (name === '' || name === 'identity') return bytes.toString('utf8');
      if (name === 'gzip' || name === 'x-gzip') return gunzipSync(bytes, options).toString('utf8');
      if (name === 'br') return brotliDecompressSync(bytes, options).toString('utf8');
      if (name === 'deflate') {
        // Servers send deflate with and without its zlib wrapper.
        try {
          return inflateSync(bytes, options).toString('utf8');
        } catch {
          return inflateRawSync(bytes, options).toString('utf8');
        }
      }
    } catch {
      return undefined;
    }
    return undefined;
  }

  /** What the record shows of a body it could not keep whole: its start as it came. */
  start(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/**
 * The exchanges kept, the newest `max`: past it the oldest goes as a new one comes, and is
 * counted. A ring, so that keeping one costs the same however long the proxy runs.
 */
class Kept {
  private readonly ring: Array<Observed | undefined>;
  private next = 0;
  count = 0;
  dropped = 0;

  constructor(readonly max: number) {
    this.ring = new Array(max);
  }

  /** Keeps an exchange; true when it pushed an older one out. */
  add(o: Observed): boolean {
    const pushedOut = this.ring[this.next] !== undefined;
    this.ring[this.next] = o;
    this.next = (this.next + 1) % this.max;
    if (pushedOut) this.dropped += 1;
    else this.count += 1;
    return pushedOut;
  }

  /** In the order the requests came. */
  all(): Observed[] {
    return this.ring.filter((o): o is Observed => o !== undefined).sort((a, b) => a.n - b.n);
  }
}

/** "1 of 1 answers: exchange #3: the message." as the line of one exchange says it: "the message." */
function problemOf(message: string, o: Observed): string {
  const rest = message.replace(/^1 of 1 [^:]*: /, '').replace(new RegExp(`^exchange #${o.n}: `), '');
  const prefix = `${named(o)}: `;
  return rest.startsWith(prefix) ? rest.slice(prefix.length) : rest;
}

/**
 * The traffic file the proxy writes, as `traffic` takes it: a report's reproduction judges
 * that file again (`traffic --ndjson FILE`), the proxy's traffic being gone with it.
 */
function trafficFileFlags(reporters: readonly string[], out: string): { targetFlags?: string } {
  // Named as a person would type it from here, when the directory is under here.
  const relative = path.relative(process.cwd(), path.resolve(out));
  const dir = relative.startsWith('..') || path.isAbsolute(relative) ? path.resolve(out) : relative || '.';
  if (reporters.includes('ndjson'))
    return { targetFlags: `--ndjson ${shellWord(path.join(dir, 'conformance.ndjson'))}` };
  if (reporters.includes('har')) return { targetFlags: `--har ${shellWord(path.join(dir, 'conformance.har'))}` };
  return {};
}

export async function runProxy(options: ProxyOptions, out: Output): Promise<number> {
  const target = httpUrl('--target', options.target);
  const receiver = options.receiver === undefined ? undefined : httpUrl('--receiver', options.receiver);
  const { host, port } = listenOf(options.listen ?? DEFAULT_LISTEN);
  const maxExchanges = options.maxExchanges ?? DEFAULT_MAX_EXCHANGES;
  const maxBody = options.maxBody ?? DEFAULT_MAX_BODY;
  if (!(Number.isSafeInteger(maxExchanges) && maxExchanges >= 1))
    throw new SetupError('--max-exchanges must be a whole number of at least 1.');
  if (!(Number.isSafeInteger(maxBody) && maxBody >= 0)) throw new SetupError('--max-body must be a whole number.');
  if (options.webhookSecret !== undefined && !options.webhookSecret.startsWith('whsec_'))
    throw new SetupError('--webhook-secret must be the whsec_... signing secret.');
  // Flags the final judging reads are checked now: a typo is no news after hours of recording.
  const reporters = reportersOf(options.reporter);
  const checks = selectChecks(createTrafficRegistry(), options.only);
  const strictAssumptions = options.strictAssumptions ?? false;
  const source = `proxy to ${target.href}`;
  const redactor = new Redactor();
  redactor.remember(options.webhookSecret, '$WEBHOOK_SECRET');
  const say = (text: string) => out.write(`${redactor.text(text)}\n`);

  const kept = new Kept(maxExchanges);
  const targetPrefix = target.pathname.replace(/\/$/, '');
  const agents = {
    'http:': new http.Agent({ keepAlive: true }),
    'https:': new https.Agent({ keepAlive: true }),
  };
  let arrived = 0;
  let inFlight = 0;
  let drained: (() => void) | undefined;
  let recording = true;

  // Live judging: each check that one exchange decides, until its first failure.
  const live = checks.filter((c) => DECIDED_BY_ONE.has(c.id));
  const failedLive = new Set<string>();
  async function judgeOne(o: Observed): Promise<void> {
    const one = new TrafficRun([o], options.webhookSecret, source);
    for (const check of live) {
      if (failedLive.has(check.id)) continue;
      try {
        await check.run(one);
      } catch (error) {
        // Skipped: the exchange holds nothing of what the check reads. A check's own error is
        // the final judging's to report, with the whole traffic.
        if (!(error instanceof CheckFailure) || failedLive.has(check.id)) continue;
        failedLive.add(check.id);
        const mark = failsRun(check.level, strictAssumptions)
          ? pc.red('✗')
          : check.level === 'assumption'
            ? pc.yellow('≠')
            : pc.yellow('!');
        const level = check.level === 'must' ? '' : pc.dim(` (${check.level})`);
        say(`${mark} ${pc.bold(check.id)} ${named(o)}${level}: ${problemOf(error.message, o)}`);
      }
    }
  }

  function remember(entry: TrafficEntry): void {
    const { headers, body } = entry.request;
    const form = /^application\/x-www-form-urlencoded\b/i.test(headers['content-type'] ?? '')
      ? Object.fromEntries(new URLSearchParams(body ?? ''))
      : undefined;
    redactor.rememberFromRequest(headers, form);
    redactor.rememberFromJson(jsonOf(body));
    redactor.rememberFromJson(jsonOf(entry.response?.body));
  }

  function keep(o: Observed): void {
    if (!recording) return;
    remember(o.entry);
    if (kept.add(o) && kept.dropped === 1)
      say(
        `--max-exchanges ${maxExchanges} reached: the oldest exchange is dropped as each new one is kept, and the final verdicts judge the last ${maxExchanges}`,
      );
    judgeOne(o).catch((e: unknown) => say(`#${o.n}: could not be judged as it passed (${String(e)})`));
  }

  const unreachable = new Set<string>();
  function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const n = ++arrived;
    const startedAt = Date.now();
    const method = (req.method ?? 'GET').toUpperCase();
    const asked = req.url ?? '/';
    if (!asked.startsWith('/')) {
      // An absolute URL: the client takes this for a forward proxy. Not recorded: nothing reached a target.
      req.resume();
      res.writeHead(400, { 'content-type': 'text/plain' }).end('this proxy takes paths: use it as the base URL\n');
      return;
    }
    inFlight += 1;
    const [pathname, query] = [asked.split('?')[0]!, asked.includes('?') ? asked.slice(asked.indexOf('?') + 1) : ''];
    const kind = receiver && isDeliveryPath(pathname) ? 'delivery' : 'api';
    let upstream: URL;
    if (kind === 'delivery') {
      upstream = new URL(receiver!.href);
      if (query) upstream.search = upstream.search ? `${upstream.search}&${query}` : `?${query}`;
    } else upstream = new URL(`${target.origin}${targetPrefix}${asked}`);
    const sent = passedOn(req.rawHeaders, upstream.host);
    const requestBody = new BodyStart(maxBody);
    const answerBody = new BodyStart(maxBody);
    let answer: { status: number; headers: Record<string, string> } | undefined;
    let error: string | undefined;
    let done = false;

    const finish = () => {
      if (done) return;
      done = true;
      inFlight -= 1;
      if (inFlight === 0) drained?.();
      const requestText = requestBody.text(sent.headers['content-encoding']);
      const requestCut = requestText === undefined && requestBody.size > 0;
      const body = requestBody.size === 0 ? (['POST', 'PUT', 'PATCH'].includes(method) ? '' : undefined) : requestText;
      const answerText = answer ? answerBody.text(answer.headers['content-encoding']) : undefined;
      const entry: TrafficEntry = {
        kind,
        checkId: '',
        startedAt,
        durationMs: Date.now() - startedAt,
        request: {
          method,
          url: upstream.href,
          headers: sent.headers,
          body: requestCut ? requestBody.start() : body,
          ...(requestCut ? { bodySize: requestBody.size } : {}),
        },
        response: answer && {
          ...answer,
          body: answerText ?? answerBody.start(),
          ...(answerBody.whole ? {} : { bodySize: answerBody.size }),
        },
        ...(error !== undefined ? { error } : {}),
      };
      keep({
        n,
        entry,
        role: roleOf(kind, upstream, sent.headers, body),
        requestBodyRecorded: !requestCut,
        responseBodyRecorded: answer === undefined || answerText !== undefined,
        suiteProbe: false,
        answeredByTarget: true,
      });
    };

    const transport = upstream.protocol === 'https:' ? https : http;
    const outgoing = transport.request(upstream, {
      method,
      headers: sent.lines,
      agent: agents[upstream.protocol as 'http:' | 'https:'],
    });
    outgoing.on('response', (incoming) => {
      const back = passedOn(incoming.rawHeaders);
      const status = incoming.statusCode ?? 502;
      try {
        res.writeHead(status, incoming.statusMessage, back.lines);
        answer = { status, headers: back.headers };
      } catch (e) {
        // A header Node's parser let in that its writer refuses: the answer cannot be passed on as it came.
        error = `the answer could not be passed on: ${(e as Error).message}`;
        incoming.destroy();
        res.writeHead(502, { 'content-type': 'text/plain' }).end(`payment-conformance proxy: ${error}\n`);
        return;
      }
      incoming.on('data', (chunk: Buffer) => answerBody.add(chunk));
      incoming.on('error', (e) => {
        error ??= `the answer broke off: ${e.message}`;
        res.destroy();
      });
      incoming.pipe(res);
    });
    outgoing.on('error', (e) => {
      // The client went first (the exchange is recorded): the request was cut off on purpose.
      if (done) return;
      error ??= `${kind === 'delivery' ? 'the receiver' : 'the target'} did not answer: ${e.message}`;
      if (!res.headersSent) {
        const where = kind === 'delivery' ? 'receiver' : 'target';
        if (!unreachable.has(where)) {
          unreachable.add(where);
          say(`#${n} ${method} ${pathname}: ${error} (the client is answered 502)`);
        }
        res.writeHead(502, { 'content-type': 'text/plain' }).end(`payment-conformance proxy: ${error}\n`);
      } else res.destroy();
    });
    req.on('data', (chunk: Buffer) => requestBody.add(chunk));
    req.pipe(outgoing);
    res.on('finish', finish);
    res.on('close', () => {
      if (res.writableFinished) return;
      error ??= 'the client closed the connection before the answer was whole';
      outgoing.destroy();
      finish();
    });
  }

  const server = http.createServer(handle);
  // Bodies come at the client's pace however slow: the client, not the proxy, decides when to give up.
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        new SetupError(`--listen ${host}:${port}: ${e.code === 'EADDRINUSE' ? 'the port is in use' : e.message}.`),
      ),
    );
    server.listen(port, host, resolve);
  });
  const address = server.address() as import('node:net').AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  say(`${pc.bold('payment-conformance proxy')} listening on ${url}`);
  say(`  passes requests on to ${target.href}: give the client ${url} as the service's base URL`);
  say(
    receiver
      ? `  requests under /webhooks/ go to the receiver ${receiver.href}, judged as deliveries: give the service ${url}/webhooks/ as webhookUrl`
      : '  requests under /webhooks/ go to the target too (no --receiver)',
  );
  const durationS = options.durationS ?? 0;
  say(
    `  keeps the last ${maxExchanges} exchanges, bodies to ${maxBody} bytes; judges all ${checks.length} checks when stopped (Ctrl-C, SIGTERM${durationS > 0 ? `, or in ${durationS} s` : ''})`,
  );
  if (!isLoopback(address.address) && !isLoopback(host))
    say(
      pc.yellow(
        `  listening beyond this machine (${host}): whoever reaches ${url} reaches the target through it, and the credentials they send are recorded`,
      ),
    );

  let stopReason: string | undefined;
  const cleanups: Array<() => void> = [];
  const stopped = new Promise<string>((resolve) => {
    const stop = (why: string) => {
      if (stopReason !== undefined) {
        say(`${why}: already stopping; the reports are being written`);
        return;
      }
      stopReason = why;
      resolve(why);
    };
    const onSignal = (signal: NodeJS.Signals) => stop(signal);
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const timer = durationS > 0 ? setTimeout(() => stop(`${durationS} s passed`), durationS * 1000) : undefined;
    const onAbort = () => stop('stopped');
    options.signal?.addEventListener('abort', onAbort, { once: true });
    cleanups.push(() => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    });
  });
  if (options.signal?.aborted) stopReason ??= 'stopped';

  try {
    const why = stopReason ?? (await stopped);
    // No new connection, and none idle kept open; then what is on its way is given time to end.
    server.close();
    server.closeIdleConnections();
    if (inFlight > 0)
      await new Promise<void>((resolve) => {
        drained = resolve;
        setTimeout(resolve, DRAIN_MS).unref();
      });
    server.closeAllConnections();
    for (const agent of Object.values(agents)) agent.destroy();
    recording = false;
    const observed = kept.all();
    const dropped =
      kept.dropped > 0
        ? `; the ${kept.dropped} oldest dropped (--max-exchanges ${maxExchanges}), the last ${observed.length} judged`
        : '';
    say(`proxy stopped (${why}): ${arrived} requests, ${kept.count + kept.dropped} exchanges recorded${dropped}`);
    if (observed.length === 0) throw new SetupError(`proxy: no exchange passed through ${url}: nothing to judge.`);
    const outDir = outOf(options.out, 'proxy');
    const reported = await judgeTraffic(
      observed,
      {
        webhookSecret: options.webhookSecret,
        only: options.only,
        reporter: options.reporter,
        out: outDir,
        strictAssumptions,
        source,
        redactor,
        ...trafficFileFlags(reporters, outDir),
      },
      out,
    );
    return reported.exitCode;
  } finally {
    server.closeAllConnections();
    for (const cleanup of cleanups) cleanup();
  }
}

interface ProxyFlags {
  target: string;
  listen: string;
  duration?: number;
  receiver?: string;
  webhookSecret?: string;
  maxExchanges: number;
  maxBody: number;
  only?: string;
  reporter: string;
  out: string;
  strictAssumptions: boolean;
}

export const proxyCommand: CommandRecord<ProxyFlags> = {
  name: 'proxy',
  description:
    'a recording reverse proxy between any client and an implementation at --target: judges each exchange as it passes, and all the traffic when stopped',
  flags: [
    { flags: '--target <url>', description: 'the implementation the requests go on to', required: true },
    {
      flags: '--listen <host:port>',
      description: 'where the proxy listens (port 0: any free port, printed); loopback unless told otherwise',
      default: DEFAULT_LISTEN,
    },
    {
      flags: '--duration <seconds>',
      description: 'stop after this long, and judge (0 or not given: at SIGINT or SIGTERM)',
      parse: integer,
    },
    {
      flags: '--receiver <url>',
      description:
        'the merchant’s webhook receiver: requests under /webhooks/ go there (with their query) and are judged as deliveries',
    },
    {
      flags: '--webhook-secret <whsec>',
      description: 'the signing secret of the deliveries: their digests are verified with it',
      secret: '$WEBHOOK_SECRET',
    },
    {
      flags: '--max-exchanges <n>',
      description: 'exchanges kept for the final judging; past it the oldest are dropped, and counted',
      parse: integer,
      default: DEFAULT_MAX_EXCHANGES,
    },
    {
      flags: '--max-body <bytes>',
      description: 'bytes of each body kept; a longer one is passed on whole but recorded cut, and not judged',
      parse: integer,
      default: DEFAULT_MAX_BODY,
    },
    FLAGS.only('"TRAFFIC-00?"; !glob excludes'),
    FLAGS.reporter,
    FLAGS.out('proxy'),
    FLAGS.strictAssumptions,
    FLAGS.verbose,
  ],
  run: (o, { out }) =>
    runProxy(
      {
        target: o.target,
        listen: o.listen,
        durationS: o.duration,
        receiver: o.receiver,
        webhookSecret: o.webhookSecret,
        maxExchanges: o.maxExchanges,
        maxBody: o.maxBody,
        only: o.only,
        reporter: o.reporter,
        out: o.out,
        strictAssumptions: o.strictAssumptions,
      },
      out,
    ),
};
