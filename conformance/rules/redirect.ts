/**
 * The redirect rule (Endpoints: POST /api/checkout-sessions): on success the payer's
 * browser is sent to `redirectUrl` with `transactionId=<uuid>` and `checkoutSessionId=<cs_id>`
 * appended as query parameters, preserving the merchant's own query parameters.
 *
 * The rule says what the address must carry, not that it carries nothing else: a parameter
 * of the target's own beside them breaks nothing the merchant relies on, as an extra
 * response field does not. What breaks the rule is another address, a merchant's parameter
 * changed (dropped, a value lost, reordered or added to), and either id missing, malformed
 * or given twice (the merchant could not tell which is meant).
 */
import { show } from '../core/json.ts';
import { UUID } from './values.ts';

const APPENDED = ['transactionId', 'checkoutSessionId'] as const;

/** What is wrong with where the payer was sent, if anything. */
export function redirectProblem(redirectTo: string, redirectUrl: string, sessionId: string): string | undefined {
  if (!URL.canParse(redirectTo)) return `The payer was sent to ${show(redirectTo)}, not a URL.`;
  const to = new URL(redirectTo);
  const from = new URL(redirectUrl);
  if (`${to.origin}${to.pathname}` !== `${from.origin}${from.pathname}`)
    return `The redirect goes to ${to.origin}${to.pathname}, not to redirectUrl ${redirectUrl}.`;
  const own = from.searchParams;
  // Values compare decoded and in order (a%20b and a+b are one value; a repeated name keeps each).
  for (const name of new Set(own.keys())) {
    if (APPENDED.includes(name as (typeof APPENDED)[number])) continue;
    const [kept, given] = [to.searchParams.getAll(name), own.getAll(name)];
    if (kept.length !== given.length || kept.some((v, i) => v !== given[i]))
      return `The merchant's own query parameter ${name}=${given.join(`&${name}=`)} must be kept as it was: ${redirectTo}`;
  }
  // The appended ids come after whatever values of those names the merchant gave itself.
  const appended = (name: string) => {
    const given = own.getAll(name);
    const all = to.searchParams.getAll(name);
    return given.every((v, i) => all[i] === v) ? all.slice(given.length) : all;
  };
  const sessions = appended('checkoutSessionId');
  if (sessions.length !== 1 || sessions[0] !== sessionId)
    return `checkoutSessionId=${sessionId} must be appended, once: ${redirectTo}`;
  const transactions = appended('transactionId');
  if (transactions.length !== 1 || !UUID.test(transactions[0]!))
    return `transactionId=<uuid> must be appended, once: ${redirectTo}`;
  return undefined;
}
