/**
 * Webhook delivery (Events: Response and retry behaviour; Signature header): each attempt
 * POSTed over HTTPS with a five-second wait, signed unless the secret is unavailable, and
 * recorded; the card rail's queue tried again up to three attempts in all.
 */
import { rootCertificates } from 'node:tls';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { SECOND, WEBHOOK_WAIT, CARD_ATTEMPTS, CARD_RETRY_DELAYS, QUEUE_TICK_MS, type Job } from './types.ts';
import { iso } from './helpers.ts';
import type { State } from './state.ts';

/** Delivery over the state; the queue is pumped from the moment it is made. */
export function makeWebhooks(st: State) {
  const { options, inFlight, queue, deliveries, orgOf, now } = st;
  function post(
    url: string,
    body: string,
    headers: Record<string, string>,
  ): Promise<{ status: number | null; error: string | null }> {
    return new Promise((resolve) => {
      let ca: string;
      try {
        ca = readFileSync(options.trustCaFile, 'utf8'); // read at sending time: the test CA may be remade
      } catch (e) {
        resolve({ status: null, error: `cannot read the trusted CA: ${(e as Error).message}` });
        return;
      }
      let settled = false;
      const req = https.request(url, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        ca: [...rootCertificates, ca],
        agent: false,
      });
      const finish = (status: number | null, error: string | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        inFlight.delete(req);
        resolve({ status, error });
      };
      // retry.wait: five seconds for an answer, then it is a failed delivery.
      const timer = setTimeout(() => {
        finish(null, 'no answer within 5 s');
        req.destroy();
      }, WEBHOOK_WAIT);
      inFlight.add(req);
      req.on('response', (res) => {
        res.resume();
        finish(res.statusCode ?? null, null);
      });
      req.on('error', (e) => finish(null, e.message));
      req.end(body);
    });
  }

  async function deliver(job: Job): Promise<void> {
    const org = orgOf(job.payment);
    job.inFlight = true;
    job.attempts += 1;
    const at = iso(now(org));
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'second-impl-hooks/1' };
    let signed = false;
    if (job.signable) {
      if (org.faults.unsigned > 0) {
        org.faults.unsigned -= 1; // sig.unsigned: secret unresolvable, sent with no header at all
      } else {
        // sig.digest with the secret current at sending time (secret.rotation); t is real
        // unix seconds of signing; ours: parts in the order v1, t (read by name, sig.versions).
        const t = Math.floor(Date.now() / SECOND);
        const v1 = createHmac('sha256', Buffer.from(org.signingSecret, 'utf8'))
          .update(`${t}.${job.body}`)
          .digest('hex');
        headers['service-signature'] = `v1=${v1},t=${t}`;
        signed = true;
      }
    }
    const { status, error } = await post(job.url, job.body, headers);
    if (!queue.has(job) && job.rail === 'card') return; // closed meanwhile
    const delivered = status !== null && status >= 200 && status < 300; // retry.success
    const finalStatus = status !== null && status >= 400 && status < 500 && status !== 408 && status !== 429; // retry.final
    const again = !delivered && !finalStatus && job.rail === 'card' && job.attempts < CARD_ATTEMPTS;
    deliveries.push({
      transactionId: job.payment.transactionId,
      url: job.url,
      attempt: job.attempts,
      at,
      signed,
      responseStatus: status,
      error,
      final: !again, // ours: no further attempt follows this one
    });
    job.inFlight = false;
    if (again) job.dueAt = now(org) + CARD_RETRY_DELAYS[job.attempts - 1]!;
    else queue.delete(job); // delivered, final, or set aside for the service's team
  }

  // The card queue, on the organisations' clocks: a clock move brings due retries on.
  const pump = setInterval(() => {
    for (const job of queue) if (!job.inFlight && now(orgOf(job.payment)) >= job.dueAt) void deliver(job);
  }, QUEUE_TICK_MS);

  return { deliver, pump };
}
