/**
 * The hosted payment page, at the `url` a create returns: who is asking, how much, the
 * reference, and the rails the payment allows. In test mode it has buttons to make the
 * payment succeed, be declined or stay pending; on success the browser is sent (303) to
 * the merchant's redirectUrl with transactionId (and checkoutSessionId) appended.
 * A completed or expired payment shows a clear page instead, the completed one with a way
 * back to the merchant. Routed in http/pages.ts.
 */
import type { Context } from 'koa';
import { orgNow } from '../domain/clock.ts';
import { DomainError } from '../domain/errors.ts';
import type { Outcome } from '../domain/lifecycle.ts';
import { redirectAfterSuccess } from '../domain/lifecycle.ts';
import { statusAt } from '../domain/payments.ts';
import { payerAttempt } from './payer.ts';
import type { Services } from '../scope.ts';
import type { Organisation, Payment, Rail } from '../store/types.ts';

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const RAILS: Record<Rail, string> = { card: 'Card', open_banking: 'Bank transfer (open banking)' };
const OUTCOMES: Array<[Outcome, string]> = [
  ['succeeded', 'Pay (succeeds)'],
  ['declined', 'Decline'],
  ['pending', 'Leave pending'],
];
const RESULTS: Record<string, string> = {
  declined: 'The payment was declined. Nothing was taken; you can try again.',
  pending: 'The payment is being processed. This page shows its outcome once it is known.',
};

function railsOf(payment: Payment): Rail[] {
  return payment.checkoutMethod === 'both' ? ['card', 'open_banking'] : [payment.checkoutMethod];
}

function money(payment: Payment): string {
  // 'en' names the dollars (NZ$, A$); a local locale would print a bare $.
  return new Intl.NumberFormat('en', { style: 'currency', currency: payment.currency }).format(payment.amountTotal);
}

/**
 * How often the page of a pending payment reloads itself: the outcome comes from the bank
 * (the sandbox API here), not from this page, and the page says it will show it. A meta
 * refresh, as the page's policy allows no script.
 */
export const PENDING_REFRESH_SECONDS = 3;

function layout(title: string, body: string, head = ''): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">${head}
  <title>${escapeHtml(title)}</title>
  <style>
    body { font: 17px/1.5 system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d1d1f; }
    main { max-width: 28rem; margin: 3rem auto; background: #fff; padding: 1.5rem 2rem 2rem; border-radius: 8px; box-shadow: 0 1px 4px #0002; }
    dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
    dt { color: #555; } dd { margin: 0; font-weight: 600; }
    fieldset { border: 1px solid #ccd; border-radius: 6px; margin: 1rem 0; padding: .75rem 1rem 1rem; }
    button { font: inherit; padding: .5rem .9rem; margin: .25rem .25rem 0 0; border-radius: 5px; border: 1px solid #335; background: #fff; cursor: pointer; }
    button[value="succeeded"] { background: #1f5fd1; color: #fff; border-color: #1f5fd1; }
    button:focus-visible { outline: 3px solid #f0a000; outline-offset: 2px; }
    .note { background: #fff6d6; padding: .5rem .75rem; border-radius: 5px; }
    .status { background: #eef3ff; padding: .5rem .75rem; border-radius: 5px; }
  </style>
</head>
<body>
  <main>
${body}
  </main>
</body>
</html>
`;
}

function details(org: Organisation, payment: Payment): string {
  const rows: Array<[string, string]> = [
    ['Amount', money(payment)],
    ['Reference', payment.reference],
    ...(payment.particulars ? [['Particulars', payment.particulars] as [string, string]] : []),
    ['Code', payment.code],
    [
      'Pay by',
      railsOf(payment)
        .map((r) => RAILS[r])
        .join(' or '),
    ],
  ];
  return `    <h1>Pay ${escapeHtml(org.name)}</h1>
    <dl>${rows.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join('')}</dl>`;
}

/** The page of `payment` at `path` (its address, without a query), as it stands at `now`. */
export function renderPage(
  org: Organisation,
  payment: Payment,
  now: number,
  path: string,
  result?: string,
): { status: number; html: string } {
  const status = statusAt(payment, now);
  if (status === 'completed') {
    // The same address a successful attempt sends the payer to: a payer who came back
    // here (or whose payment completed while pending) can still reach the merchant.
    const back = redirectAfterSuccess(payment);
    const next = back
      ? `\n    <p><a class="return" href="${escapeHtml(back)}">Return to ${escapeHtml(org.name)}</a></p>`
      : '';
    return {
      status: 200,
      html: layout(
        'Payment complete',
        `    <h1>Payment complete</h1>\n    <p role="status">This payment to ${escapeHtml(org.name)} (${escapeHtml(money(payment))}, reference ${escapeHtml(payment.reference)}) has been made.${back ? '' : ' You can close this page.'}</p>${next}`,
      ),
    };
  }
  if (status === 'expired') {
    return {
      status: 410,
      html: layout(
        'Payment request expired',
        `    <h1>This payment request has expired</h1>\n    <p role="alert">Nothing was taken. Ask ${escapeHtml(org.name)} for a new payment request.</p>`,
      ),
    };
  }
  const shown = status === 'pending' ? 'pending' : result;
  const message =
    shown && RESULTS[shown]
      ? `\n    <p class="status" role="${shown === 'declined' ? 'alert' : 'status'}">${RESULTS[shown]}</p>`
      : '';
  const forms =
    payment.mode === 'test'
      ? `\n    <p class="note">Test mode: no money moves. Choose what the payment does.</p>` +
        railsOf(payment)
          .map(
            (rail) => `
    <form method="post" action="${escapeHtml(`${path}/attempts`)}">
      <fieldset>
        <legend>${RAILS[rail]}</legend>
        <input type="hidden" name="rail" value="${rail}">
        ${OUTCOMES.map(([value, label]) => `<button type="submit" name="outcome" value="${value}">${label}</button>`).join('\n        ')}
      </fieldset>
    </form>`,
          )
          .join('')
      : `\n    <p class="note">Live payments are not taken by this sandbox server.</p>`;
  // Reloads its own address without ?result=, so the outcome shown is the payment's, not the last button's.
  const refresh =
    status === 'pending'
      ? `\n  <meta http-equiv="refresh" content="${PENDING_REFRESH_SECONDS}; url=${escapeHtml(path)}">`
      : '';
  return { status: 200, html: layout(`Pay ${org.name}`, `${details(org, payment)}${message}${forms}`, refresh) };
}

/** Which payments a hosted page shows: checkout sessions by `cs_` id, the others by transaction id. */
export type Section = 'sessions' | 'links' | 'transactions';

const KIND = { sessions: 'checkout_session', links: 'payment_link', transactions: 'legacy' } as const;

function pagePath(section: Section, payment: Payment): string {
  return section === 'sessions' ? `/pay/${payment.sessionId}` : `/pay/${section}/${payment.transactionId}`;
}

async function paymentOn(services: Services, section: Section, id: string) {
  const by = section === 'sessions' ? { sessionId: id } : { transactionId: id };
  const payment = await services.store.findPayment(by);
  const org = payment?.kind === KIND[section] ? await services.store.getOrganisation(payment.orgId) : undefined;
  return payment && org ? { payment, org } : undefined;
}

function html(ctx: Context, status: number, body: string): void {
  ctx.set(
    'content-security-policy',
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'",
  );
  ctx.set('cache-control', 'no-store');
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = body;
}

const NOT_FOUND = layout(
  'Payment not found',
  '    <h1>Payment not found</h1>\n    <p role="alert">This payment link is not valid. Check the address, or ask the merchant for a new one.</p>',
);

/** The page (`GET /pay/...`) and its form's target (`POST /pay/.../attempts`), for each section. */
export function hostedPages(services: Services) {
  return {
    show: (section: Section) =>
      async function showPaymentPage(ctx: Context & { params: Record<string, string> }) {
        const found = await paymentOn(services, section, ctx.params.id!);
        if (!found) return html(ctx, 404, NOT_FOUND);
        const { payment, org } = found;
        const result = typeof ctx.query.result === 'string' ? ctx.query.result : undefined;
        const page = renderPage(org, payment, orgNow(org), pagePath(section, payment), result);
        html(ctx, page.status, page.html);
      },
    attempt: (section: Section) =>
      async function payOnPage(ctx: Context & { params: Record<string, string> }) {
        const found = await paymentOn(services, section, ctx.params.id!);
        if (!found) return html(ctx, 404, NOT_FOUND);
        const { payment } = found;
        const page = pagePath(section, payment);
        const form = new URLSearchParams((ctx.state.rawBody as Buffer).toString('utf8'));
        const rail = form.get('rail');
        const outcome = OUTCOMES.find(([o]) => o === form.get('outcome'))?.[0];
        if (payment.mode !== 'test' || (rail !== 'card' && rail !== 'open_banking') || !outcome) {
          return seeOther(ctx, page);
        }
        try {
          const done = await payerAttempt(services, payment, rail, outcome);
          seeOther(ctx, done.redirectTo ?? `${page}?result=${outcome}`);
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          // Completed meanwhile, expired, or a rail not allowed: the page says where things stand.
          seeOther(ctx, page);
        }
      },
  };
}

/**
 * 303 to `location`, with a plain-text body. Koa's redirect writes an HTML link to the
 * target, and the merchant's redirectUrl may be any absolute URL (`javascript:` too):
 * browsers do not follow such a Location, but a link on this page would run it.
 */
function seeOther(ctx: Context, location: string): void {
  ctx.redirect(location);
  ctx.status = 303;
  ctx.type = 'text/plain; charset=utf-8';
  ctx.body = 'See Other';
}
