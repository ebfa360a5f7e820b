/** CLIENT checks of the Idempotency rules: a key on every create, and a lost answer retried with the same key and body. */
import { type ClientRun, sessionBody } from '../context.ts';
import { isCreate, type Plan } from '../service.ts';
import type { Recorded } from '../../../core/exchange.ts';
import {
  type ClientCheck,
  createsByPayment,
  during,
  errorReply,
  expectAnswered,
  expectSeen,
  IDEM,
  idOf,
  judgeRepeats,
  last,
  on,
  traffic,
} from '../scenarios.ts';

export const idempotencyChecks: ClientCheck[] = [
  {
    id: 'CLIENT-004',
    clauses: ['create.idempotency-key'],
    level: 'should',
    section: IDEM,
    title: 'Every create carries an Idempotency-Key: one per payment (two alike included), kept on its retries',
    async run(run) {
      const s = await traffic(run);
      const payments = createsByPayment(s);
      expectSeen('create', payments.flatMap((p) => p.creates).length);
      const keys: string[] = [];
      for (const [i, { creates }] of payments.entries()) {
        const own = new Set(creates.map((r) => r.headers['idempotency-key']));
        if (creates.length === 0) continue;
        if (own.has(undefined) || own.has(''))
          s.fail(
            `Create ${i + 1} carries no Idempotency-Key ("strongly recommended": its retry may make a second payment).`,
          );
        if (own.size > 1) s.fail(`Create ${i + 1} was sent under more than one Idempotency-Key.`);
        keys.push([...own][0]!);
      }
      // The traffic creates two payments with the same body: a key made from the body would merge them.
      if (new Set(keys).size !== keys.length) s.fail('Two payments were created under one Idempotency-Key.');
    },
  },
  answerLost(
    'CLIENT-013',
    'A create answered 500 after the target committed it: a retry carries the same key and body and gets that session',
    (r) => ({ commit: errorReply(r, 500, 'internal_error') }),
  ),
  answerLost(
    'CLIENT-014',
    'A create whose connection is reset after the target committed it: a retry carries the same key and body',
    () => ({ commitThenReset: true }),
  ),
  answerLost(
    'CLIENT-015',
    'A create whose answer never comes: a retry after the client gives up carries the same key and body',
    (_r, run) => ({ commitThenHold: Math.max(10_000, 3 * run.settings.requestTimeoutMs) }),
  ),
  answerLost(
    'CLIENT-022',
    'A create answered 500 before the target saw it: a retry carries the same key and body and gets the one session made',
    (r) => ({ answer: errorReply(r, 500, 'internal_error') }),
  ),
];

/**
 * A create whose answer the client did not get as the target gave it (a 500 before or after
 * the target committed it, a reset, an answer withheld): any repeat carries the first key and
 * body, and a success gives the session the target made.
 */
function answerLost(id: string, title: string, plan: (r: Recorded, run: ClientRun) => Plan): ClientCheck {
  return {
    id,
    clauses: ['idem.no-key', 'idem.replay', 'order.500'],
    section: IDEM,
    title,
    async run(run) {
      await run.scenario(
        on(isCreate, (n, r) => (n === 1 ? plan(r, run) : undefined)),
        async (s) => {
          const answer = await s.ask({ op: 'createSession', body: sessionBody() });
          expectAnswered(s, answer, 'A create whose answer was lost');
          const creates = during(s, last(s)).filter(isCreate);
          judgeRepeats(s, creates, idOf(creates.find((r) => r.target)?.target?.body));
        },
      );
    },
  };
}
