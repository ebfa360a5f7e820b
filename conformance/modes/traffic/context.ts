/**
 * What the traffic checks judge: the exchanges read from a file (or seen by the proxy),
 * each of the API as an Exchange the shared rules take, the webhook deliveries, and the
 * exchanges grouped by the party that sent them.
 *
 * A party is a client, known by its `clientId`: a token request names it in its form, and
 * each token its answer issued names it on the requests that carry that token. A token
 * whose issue the file does not hold is a party of its own. A token the file shows only
 * by a placeholder (`$TOKEN`, as this suite's reports redact it) names no one, unless the
 * file names the client beside it (`_client`, which this suite writes); else its requests
 * are left out of every rule about one party's sequence.
 */
import { isObject } from '../../core/json.ts';
import type { Exchange } from '../../core/exchange.ts';
import { CheckSkipped } from '../../core/outcome.ts';
import type { Observed } from './read.ts';

/** The life of a token the document gives (Authentication: five minutes), when its answer says none readable. */
export const TOKEN_LIFETIME_MS = 5 * 60 * 1000;

const isPlaceholder = (token: string) => token.startsWith('$');

/** The path of an API request from `/api/` on (a service may live under a prefix). */
export const apiPath = (o: Observed) => new URL(o.entry.request.url).pathname.replace(/^.*?(?=\/api\/)/, '');
export const isTokenRequest = (o: Observed) => o.entry.request.method === 'POST' && apiPath(o) === '/api/token';
export const isCreate = (o: Observed) =>
  o.entry.request.method === 'POST' && ['/api/checkout-sessions', '/api/payment-links'].includes(apiPath(o));
export const bearerOf = (o: Observed) => /^Bearer\s+(\S+)$/i.exec(o.entry.request.headers.authorization ?? '')?.[1];

/**
 * Which token a request carries: the token itself, or, shown by a placeholder, the
 * fingerprint the file gives beside it (`_token`); undefined when the file cannot say.
 */
export function tokenIdOf(o: Observed): string | undefined {
  const bearer = bearerOf(o);
  if (bearer === undefined) return undefined;
  if (!isPlaceholder(bearer)) return bearer;
  return o.tokenTag ? `#${o.tokenTag}` : undefined;
}

/** Which token a token request's answer issued, told apart as tokenIdOf tells them. */
export function issuedTokenOf(o: Observed): string | undefined {
  const token = jsonOf(o.entry.response?.body)?.accessToken;
  if (typeof token !== 'string') return undefined;
  if (!isPlaceholder(token)) return token;
  return o.tokenTag ? `#${o.tokenTag}` : undefined;
}
export const errorCodeOf = (o: Observed): string | undefined => {
  const code = jsonOf(o.entry.response?.body)?.error;
  return isObject(code) && typeof code.code === 'string' ? code.code : undefined;
};

export function jsonOf(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** "#12 POST /api/checkout-sessions → 200": how a verdict names an exchange. */
export const named = (o: Observed) =>
  `#${o.n} ${o.entry.request.method} ${new URL(o.entry.request.url).pathname} → ${o.entry.response?.status ?? 'no answer'}`;

export class TrafficRun {
  /** Exchanges of the API the target answered, in the order they began: what the service's rules judge. */
  readonly api: Observed[];
  /** Requests of clients to the API (a test suite's probes left out), answered or not: what the clients' rules judge. */
  readonly sent: Observed[];
  readonly deliveries: Observed[];
  /** Exchanges no rule judges: pages, the sandbox API, assets. */
  readonly other: Observed[];
  /** When an organisation's clock was moved forward (the sandbox API). */
  private readonly clockMoves: number[];
  /** Token → the client it was issued to, from the token requests the file holds. */
  private readonly owners = new Map<string, string>();

  constructor(
    readonly observed: readonly Observed[],
    /** --webhook-secret: the deliveries' signatures can be verified with it. */
    readonly webhookSecret: string | undefined,
    /** Where the traffic came from: a file, or the proxy's target. */
    readonly source: string,
  ) {
    // What the target answered: an answer a test harness gave in its place is no verdict on it.
    this.api = observed.filter((o) => o.role === 'api' && o.entry.response !== undefined && o.answeredByTarget);
    this.sent = observed.filter((o) => o.role === 'api' && !o.suiteProbe);
    this.deliveries = observed.filter((o) => o.role === 'delivery');
    this.other = observed.filter((o) => o.role === 'other');
    this.clockMoves = this.other
      .filter(
        (o) =>
          o.entry.request.method === 'POST' &&
          /\/sandbox\/organisations\/[^/]+\/clock$/.test(new URL(o.entry.request.url).pathname),
      )
      .map((o) => o.entry.startedAt);
    for (const o of this.api) {
      if (!isTokenRequest(o) || o.entry.response?.status !== 200) continue;
      const client = clientIdOf(o) ?? o.client;
      const token = issuedTokenOf(o);
      if (client && token) this.owners.set(token, client);
    }
  }

  /** The API's answers as the shared rules take them, those with a recorded body. */
  exchanges(): Exchange[] {
    return this.api
      .filter((o) => o.responseBodyRecorded)
      .map((o) => ({
        request: { ...o.entry.request, url: o.entry.request.url },
        status: o.entry.response!.status,
        headers: o.entry.response!.headers,
        text: o.entry.response!.body,
        json: jsonOf(o.entry.response!.body) ?? arrayOrUndefined(o.entry.response!.body),
        checkId: `#${o.n}`,
      }));
  }

  /** Who sent an exchange, or undefined when the file cannot say (see the file's opening comment). */
  partyOf(o: Observed): string | undefined {
    if (o.client) return `client ${o.client}`;
    if (isTokenRequest(o)) {
      const client = clientIdOf(o);
      return client ? `client ${client}` : undefined;
    }
    const token = tokenIdOf(o);
    if (token === undefined) return undefined;
    const owner = this.owners.get(token);
    return owner ? `client ${owner}` : `token ${token.slice(0, 7)}…`;
  }

  /**
   * Whether an organisation's clock was moved (the sandbox API) between two exchanges: what
   * the document times by it (token and key lifetimes) can no longer be read from the
   * times the file records, so a rule about them leaves such a pair unjudged.
   */
  clockMovedBetween(a: Observed, b: Observed): boolean {
    const [from, to] = [a.entry.startedAt, b.entry.startedAt].sort((x, y) => x - y) as [number, number];
    return this.clockMoves.some((t) => t >= from && t <= to);
  }

  /** Whether an organisation's clock was moved before the exchange: what it stamps may follow that clock. */
  clockMovedBefore(o: Observed): boolean {
    return this.clockMoves.some((t) => t <= o.entry.startedAt);
  }

  /** Exchanges (the API's, by default) by party, each in order; those of no known party left out. */
  byParty(of: readonly Observed[] = this.api): Map<string, Observed[]> {
    const parties = new Map<string, Observed[]>();
    for (const o of of) {
      const party = this.partyOf(o);
      if (party === undefined) continue;
      parties.set(party, [...(parties.get(party) ?? []), o]);
    }
    return parties;
  }

  /** The client a token belongs to, when the file holds its issue. */
  ownerOf(token: string): string | undefined {
    return this.owners.get(token);
  }

  /** The API's exchanges that `which` picks; not judged (skipped, saying why) when there are none. */
  expect(which: (o: Observed) => boolean, what: string): Observed[] {
    const found = this.api.filter(which);
    if (found.length === 0) throw new CheckSkipped(`the traffic holds no ${what}`);
    return found;
  }

  /** Clients' requests that `which` picks; not judged when there are none, saying why. */
  expectSent(which: (o: Observed) => boolean, what: string): Observed[] {
    const found = this.sent.filter(which);
    if (found.length > 0) return found;
    const probes = this.observed.filter((o) => o.suiteProbe).length;
    throw new CheckSkipped(
      `the traffic holds no ${what} of a client${probes > 0 ? ` (${probes} requests are this suite's own probes of a target, which break clients' rules on purpose)` : ''}`,
    );
  }
}

function arrayOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The clientId a token request's form names. */
export function clientIdOf(o: Observed): string | undefined {
  const body = o.entry.request.body;
  if (body === undefined) return undefined;
  const fromForm = new URLSearchParams(body).get('clientId');
  if (fromForm) return fromForm;
  const fromJson = jsonOf(body)?.clientId;
  return typeof fromJson === 'string' ? fromJson : undefined;
}
