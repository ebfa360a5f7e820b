/**
 * The reference server as a target whose payment links and legacy transactions have shapes
 * of their own, as the document lets them (it shows neither): a mutating proxy that takes
 * `POST /api/payment-links` as `{ amountDue, webhookUrl? }` and `POST /api/transaction` as
 * `{ total, notificationUrl?, foreignTransactionId? }`, refuses the suite's modelled
 * requests with 400 validation_failed, and reads a link's state back in words of its own.
 */
import { type Message, type Mutation, type Reply, startMutatingProxy } from './mutating-proxy.ts';

/** The target's word for each of the document's statuses, on a link read. */
export const OWN_STATE: Record<string, string> = {
  created: 'open',
  pending: 'processing',
  completed: 'paid',
  failed: 'declined',
  expired: 'lapsed',
};

const PAID_URL = 'https://shop.example.com/paid';

function parse(body: string): Record<string, unknown> {
  try {
    const json: unknown = JSON.parse(body);
    return json && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** A validation_failed envelope naming the field the target's own shape needs. */
function refused(target: string, field: string): Reply {
  return {
    status: 400,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      error: {
        code: 'validation_failed',
        message: `${field} is required`,
        param: field,
        doc_url: `${target}/docs/errors/#validation_failed`,
        details: [{ field, constraints: { required: `${field} is required` } }],
      },
    }),
  };
}

function ownShapes(target: string): Mutation {
  return {
    request(m: Message) {
      if (m.method !== 'POST') return m;
      const body = parse(m.body);
      const own = (field: string) => typeof body[field] === 'number' && !('amount' in body);
      const as = (json: Record<string, unknown>): Message => ({ ...m, body: JSON.stringify(json) });
      const common = { creditorReference: { reference: 'OWN' }, redirectUrl: PAID_URL, checkoutMethod: 'card' };
      if (m.url === '/api/payment-links') {
        if (!own('amountDue')) return refused(target, 'amountDue');
        const { amountDue, webhookUrl } = body;
        return as({ amount: { total: amountDue }, ...common, ...(webhookUrl === undefined ? {} : { webhookUrl }) });
      }
      if (m.url === '/api/transaction') {
        if (!own('total')) return refused(target, 'total');
        const { total, notificationUrl, foreignTransactionId } = body;
        return as({
          amount: { total },
          ...common,
          ...(notificationUrl === undefined ? {} : { webhookUrl: notificationUrl }),
          ...(foreignTransactionId === undefined ? {} : { foreignTransactionId }),
        });
      }
      return m;
    },
    response(m, reply) {
      if (m.method !== 'GET' || !/^\/api\/payment-links\/[^/?]+$/.test(m.url) || reply.status !== 200) return reply;
      const { status, ...rest } = parse(reply.body);
      return { ...reply, body: JSON.stringify({ ...rest, state: OWN_STATE[String(status)] ?? status }) };
    },
  };
}

/** Starts the proxy in front of the server at `target`. */
export function startOwnShapesProxy(target: string) {
  return startMutatingProxy(target, ownShapes(target));
}
