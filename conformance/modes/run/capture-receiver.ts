/**
 * The suite's own webhook receiver: it captures every delivery the target makes (method,
 * headers, the exact raw bytes) and answers as each check tells it, so deliveries are
 * judged independently of the target's own records. Each check gets its own path.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Answer, Received } from '../../core/exchange.ts';

/**
 * How the receiver answers each delivery to a path. It may take its time (a promise), to
 * do what a merchant does before answering (read the payment back); the check that says
 * so keeps it well inside the five seconds the service waits.
 */
export type Behaviour = (attempt: number, delivery: Received) => Answer | Promise<Answer>;

/** The one event the document gives a meaning: paid. */
export const COMPLETED_EVENT = 'checkout_session.completed';

/**
 * A delivery of an event kind the document does not name ("More event values will be
 * added"): the receiver answers it 2xx, as the document asks of receivers, and keeps it
 * apart, so that it is neither an attempt of the completed event nor taken for one.
 */
export const isOtherEvent = (d: Pick<Received, 'body'>) => {
  const event = (d.body as { event?: unknown } | null | undefined)?.event;
  return typeof event === 'string' && event !== COMPLETED_EVENT;
};

/** Did the receiver accept this delivery in time (a 2xx at once)? */
export const acceptedInTime = (d: Received) =>
  d.answer !== undefined && 'status' in d.answer && d.answer.status >= 200 && d.answer.status < 300;

/**
 * The attempts of one event: every delivery up to and including the first one accepted
 * in time. Later ones are repeats of a delivered event, which the document allows.
 */
export function attemptsOf(deliveries: Received[]): Received[] {
  const index = deliveries.findIndex(acceptedInTime);
  return index < 0 ? deliveries : deliveries.slice(0, index + 1);
}

export class CaptureReceiver {
  private server: http.Server | https.Server | undefined;
  private readonly deliveries = new Map<string, Received[]>();
  /** Deliveries of other event kinds, by path (see isOtherEvent). */
  private readonly otherEvents = new Map<string, Received[]>();
  private readonly behaviours = new Map<string, Behaviour>();
  private readonly held = new Set<{ res: http.ServerResponse; timer: NodeJS.Timeout }>();
  private listeners = new Set<() => void>();
  publicUrl = '';

  /** Listens on host:port, over HTTPS when given a certificate (--receiver-tls). */
  async start(host: string, port: number, publicUrl?: string, tls?: { cert: string; key: string }): Promise<void> {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => this.handle(req, res);
    this.server = tls ? https.createServer({ cert: tls.cert, key: tls.key }, handler) : http.createServer(handler);
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    const address = this.server.address() as AddressInfo;
    const shownHost = host.includes(':') ? `[${host}]` : host;
    this.publicUrl = (publicUrl ?? `${tls ? 'https' : 'http'}://${shownHost}:${address.port}`).replace(/\/+$/, '');
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        body = undefined;
      }
      const path = (req.url ?? '/').split('?')[0]!;
      const other = isOtherEvent({ body });
      const lists = other ? this.otherEvents : this.deliveries;
      const list = lists.get(path) ?? [];
      const delivery: Received = {
        method: req.method ?? '',
        path,
        headers: req.headers,
        raw,
        body,
        receivedAt: Date.now(),
        attempt: list.length + 1,
      };
      list.push(delivery);
      lists.set(path, list);
      for (const listener of this.listeners) listener();
      const behaviour = other ? undefined : this.behaviours.get(path);
      const answer = behaviour ? behaviour(delivery.attempt, delivery) : { status: 200 };
      // A behaviour that fails answers 200: the suite's own trouble is no failed delivery.
      if (answer instanceof Promise)
        answer.then(
          (a) => this.answer(delivery, res, a),
          () => this.answer(delivery, res, { status: 200 }),
        );
      else this.answer(delivery, res, answer);
    });
  }

  private answer(delivery: Received, res: http.ServerResponse, answer: Answer): void {
    delivery.answer = answer;
    const send = (a: Exclude<Answer, { holdMs: number }>) => {
      delivery.answeredAt = Date.now();
      if (res.destroyed) return;
      const headers: Record<string, string> = a.location === undefined ? {} : { location: a.location };
      const body = a.body === undefined ? { type: 'application/json', text: '{}' } : a.body;
      // 204 and 304 have no body (RFC 9110 15.3.5, 15.4.5).
      if (body === null || a.status === 204 || a.status === 304) res.writeHead(a.status, headers).end();
      else res.writeHead(a.status, { ...headers, 'content-type': body.type }).end(body.text);
    };
    if ('holdMs' in answer) {
      const entry = {
        res,
        timer: setTimeout(() => {
          this.held.delete(entry);
          send({ status: 200 });
        }, answer.holdMs),
      };
      this.held.add(entry);
      return;
    }
    send(answer);
  }

  behave(path: string, behaviour: Behaviour): void {
    this.behaviours.set(path, behaviour);
  }

  /** Every delivery so far, to any path, but those of other event kinds. */
  all(): Received[] {
    return [...this.deliveries.values()].flat();
  }

  /** Every delivery so far, to any path, other event kinds included, in the order they arrived. */
  everything(): Received[] {
    return [...this.all(), ...[...this.otherEvents.values()].flat()].sort((a, b) => a.receivedAt - b.receivedAt);
  }

  /** The deliveries to `path`, but those of other event kinds. */
  received(path: string): Received[] {
    return [...(this.deliveries.get(path) ?? [])];
  }

  /** The deliveries of other event kinds to `path`. */
  receivedOther(path: string): Received[] {
    return [...(this.otherEvents.get(path) ?? [])];
  }

  /** Resolves with the deliveries to `path` once there are `count`, or with what arrived by the deadline. */
  waitFor(path: string, count: number, timeoutMs: number, signal?: AbortSignal): Promise<Received[]> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const check = () => {
        if (this.received(path).length >= count) done();
      };
      const onAbort = () => {
        clearTimeout(timer);
        this.listeners.delete(check);
        reject(signal!.reason);
      };
      const done = () => {
        clearTimeout(timer);
        this.listeners.delete(check);
        signal?.removeEventListener('abort', onAbort);
        resolve(this.received(path));
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.listeners.add(check);
      check();
    });
  }

  async close(): Promise<void> {
    for (const entry of this.held) {
      clearTimeout(entry.timer);
      entry.res.destroy();
    }
    this.held.clear();
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}
