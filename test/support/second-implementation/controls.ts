/**
 * The test controls under /__control/, behind the Control-Token header: what the adapter
 * (./adapter.ts) drives the implementation with, beside its public API.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SECOND, type Organisation, type Payment, ApiError } from './types.ts';
import { isObject, iso, digest } from './helpers.ts';
import type { State, makeResponses } from './state.ts';
import type { makeAccounts } from './accounts.ts';
import type { makeAttempts } from './attempts.ts';

/** The control endpoints over the state. */
export function makeControls(
  st: State,
  responses: ReturnType<typeof makeResponses>,
  accounts: ReturnType<typeof makeAccounts>,
  attempts: ReturnType<typeof makeAttempts>,
) {
  const { orgs, keys, sessions, payments, deliveries, now, options } = st;
  const { send, notFound, noRoute } = responses;
  const { newSigningSecret, newKey } = accounts;
  const { attempt } = attempts;
  const controlDigest = digest(options.controlToken);

  async function control(req: IncomingMessage, res: ServerResponse, url: URL, raw: Buffer): Promise<void> {
    const given = req.headers['control-token'];
    if (typeof given !== 'string' || !timingSafeEqual(digest(given), controlDigest))
      throw new ApiError(401, 'unauthorized', 'The Control-Token header is missing or wrong.');
    let body: Record<string, unknown> = {};
    if (raw.length > 0) {
      const parsed: unknown = JSON.parse(raw.toString('utf8'));
      if (isObject(parsed)) body = parsed;
    }
    const method = req.method ?? 'GET';
    const parts = url.pathname
      .split('/')
      .slice(2)
      .map((s) => decodeURIComponent(s));
    const route = `${method} ${parts.map((s, i) => (i % 2 === 1 && parts[0] !== 'webhook-deliveries' ? ':id' : s)).join('/')}`;
    const org = () => {
      const found = orgs.get(parts[1] ?? '');
      if (!found) throw notFound('organisation');
      return found;
    };

    switch (route) {
      case 'POST organisations': {
        const currency = body.settlementCurrency === 'AUD' ? 'AUD' : 'NZD';
        const created: Organisation = {
          id: `org-${randomBytes(6).toString('hex')}`,
          settlementCurrency: currency,
          cardEnabled: body.cardEnabled !== false,
          openBankingApproved: body.openBankingApproved !== false,
          settlementAccount: body.settlementAccount !== false,
          signingSecret: newSigningSecret(),
          clockOffsetMs: 0,
          faults: { afterCommit: 0, unsigned: 0 },
        };
        orgs.set(created.id, created);
        return send(res, 200, {
          id: created.id,
          webhookSigningSecret: created.signingSecret,
          apiKeys: { test: newKey(created.id, 'test'), live: newKey(created.id, 'live') },
        });
      }
      case 'POST organisations/:id/api-keys':
        return send(res, 200, newKey(org().id, body.mode === 'live' ? 'live' : 'test'));
      case 'DELETE api-keys/:id':
        if (!keys.delete(parts[1] ?? '')) throw notFound('API key');
        return send(res, 200, { deleted: parts[1] });
      case 'POST organisations/:id/webhook-secret': {
        const o = org();
        o.signingSecret = newSigningSecret(); // secret.rotation: replaced outright, no overlap
        return send(res, 200, { webhookSigningSecret: o.signingSecret });
      }
      case 'POST organisations/:id/clock': {
        const o = org();
        const seconds = Number(body.seconds);
        if (!Number.isFinite(seconds) || seconds < 0) throw new ApiError(400, 'bad_seconds', 'seconds must be >= 0');
        o.clockOffsetMs += seconds * SECOND;
        return send(res, 200, { now: iso(now(o)) });
      }
      case 'POST organisations/:id/faults': {
        const o = org();
        const times = body.times === undefined ? 1 : Number(body.times);
        if (body.kind === 'internal_error_after_commit') o.faults.afterCommit += times;
        else if (body.kind === 'signing_secret_unavailable') o.faults.unsigned += times;
        else throw new ApiError(400, 'bad_fault', 'unknown fault kind');
        return send(res, 200, { kind: body.kind, times });
      }
      case 'POST attempts': {
        const target = isObject(body.target) ? body.target : {};
        const id = String(target.id ?? '');
        const kinds: Record<string, Payment['kind']> = {
          'checkout-session': 'session',
          'payment-link': 'link',
          transaction: 'legacy',
        };
        const p = target.kind === 'checkout-session' ? sessions.get(id) : payments.get(id);
        if (!p || p.kind !== kinds[String(target.kind)]) throw notFound('payment');
        if (body.rail !== 'card' && body.rail !== 'open_banking') throw new ApiError(400, 'bad_rail', 'unknown rail');
        return send(res, 200, attempt(p, body.rail, String(body.outcome)));
      }
      case 'GET webhook-deliveries': {
        const byTx = url.searchParams.get('transactionId');
        const bySession = url.searchParams.get('checkoutSessionId');
        const tx = bySession === null ? byTx : (sessions.get(bySession)?.transactionId ?? '');
        return send(res, 200, { deliveries: deliveries.filter((d) => tx === null || d.transactionId === tx) });
      }
      default:
        throw noRoute();
    }
  }

  return { control };
}
