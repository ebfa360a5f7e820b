/**
 * TRAFFIC checks of the webhook deliveries the traffic holds (service document: Events:
 * Payload, Signature header; Legacy payload): each body against the documented payload,
 * each signature header's form, and with --webhook-secret its digest.
 */
import { webhookBodyProblems } from '../../../core/description.ts';
import { CheckSkipped } from '../../../core/outcome.ts';
import {
  digestProblem,
  headerFormatProblem,
  type SignedDelivery,
  staleSignatureProblem,
} from '../../../rules/signature.ts';
import { jsonOf } from '../context.ts';
import type { Observed } from '../read.ts';
import { firstWrong, type TrafficCheck } from './service.ts';

const EVENTS = 'Events';
const signatureOf = (o: Observed) => o.entry.request.headers['service-signature'];
const signedDelivery = (d: Observed): SignedDelivery => ({
  raw: Buffer.from(d.entry.request.body ?? ''),
  headers: d.entry.request.headers,
  receivedAt: d.entry.startedAt,
});

function deliveries(o: { deliveries: Observed[] }, signed: boolean): Observed[] {
  const found = o.deliveries.filter((d) => d.requestBodyRecorded && (!signed || signatureOf(d) !== undefined));
  if (found.length === 0)
    throw new CheckSkipped(`the traffic holds no ${signed ? 'signed ' : ''}webhook delivery with its body`);
  return found;
}

export const webhookChecks: TrafficCheck[] = [
  {
    id: 'TRAFFIC-020',
    clauses: ['payload.small', 'legacy.payload'],
    section: EVENTS,
    title: 'every webhook body matches the documented payload (a legacy body, unsigned, the legacy one)',
    run: async (run) =>
      firstWrong(
        deliveries(run, false),
        (d) => {
          const body = jsonOf(d.entry.request.body);
          const legacy = signatureOf(d) === undefined && body?.event === undefined;
          const problem = webhookBodyProblems(body, legacy);
          return problem ? `the ${legacy ? 'legacy ' : ''}body: ${problem}` : undefined;
        },
        'deliveries',
      ),
  },
  {
    id: 'TRAFFIC-021',
    clauses: ['sig.header', 'sig.format'],
    section: EVENTS,
    title: 'every signed delivery’s Service-Signature header reads as t=<unix_seconds>,v1=<hex_digest>',
    run: async (run) =>
      firstWrong(deliveries(run, true), (d) => headerFormatProblem(signatureOf(d)!), 'signed deliveries'),
  },
  {
    id: 'TRAFFIC-022',
    clauses: ['sig.digest'],
    section: EVENTS,
    title: 'every signed delivery’s v1 is the HMAC-SHA256 of t.<raw body> under the webhook secret',
    async run(run) {
      const secret = run.webhookSecret;
      if (secret === undefined) throw new CheckSkipped('needs --webhook-secret: a digest is verified with it');
      firstWrong(deliveries(run, true), (d) => digestProblem(signedDelivery(d), secret), 'signed deliveries');
    },
  },
  {
    id: 'TRAFFIC-023',
    clauses: ['sig.format', 'limit.signature-age'],
    section: EVENTS,
    title:
      'no signed delivery arrives with a t older than five minutes (every receiver following the document rejects it)',
    async run(run) {
      // After the sandbox moved an organisation's clock, t may follow that clock, not the recorder's.
      const judged = deliveries(run, true).filter((d) => !run.clockMovedBefore(d));
      if (judged.length === 0)
        throw new CheckSkipped(
          'every signed delivery came after an organisation’s clock was moved: its t follows that clock',
        );
      firstWrong(judged, (d) => staleSignatureProblem(signedDelivery(d)), 'signed deliveries');
    },
  },
];
