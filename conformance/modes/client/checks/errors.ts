/** CLIENT checks of Errors: branching on the code, unknown codes, configuration errors not retried, internal_error retried with backoff. */
import { ACCOUNT_CONFIGURATION_CODES } from '@payment-service/contract/errors';
import { type Scenario, sessionBody } from '../context.ts';
import { isCreate, isSessionRead, isToken } from '../service.ts';
import type { Recorded } from '../../../core/exchange.ts';
import { backoffProblem, MOST_ATTEMPTS } from '../../../rules/client.ts';
import {
  type ClientCheck,
  during,
  errorReply,
  ERRORS,
  expectAnswered,
  expectReported,
  expectSeen,
  judgeRepeats,
  last,
  on,
  valueIn,
} from '../scenarios.ts';

export const errorChecks: ClientCheck[] = [
  {
    id: 'CLIENT-009',
    clauses: [
      'status.400',
      'status.401',
      'status.404',
      'code.validation-failed',
      'code.invalid-token',
      'code.not-found',
    ],
    section: ERRORS,
    title: 'validation_failed, invalid_token and not_found are reported as such, and not sent again',
    async run(run) {
      await run.scenario(
        on(isCreate, (n, r) =>
          n === 1
            ? { answer: errorReply(r, 400, 'validation_failed', 'amount.total') }
            : n === 2
              ? { answer: errorReply(r, 401, 'invalid_token') }
              : undefined,
        ),
        async (s) => {
          const cases: Array<[string, Parameters<Scenario['ask']>[0], (r: Recorded) => boolean]> = [
            ['validation_failed', { op: 'createSession', body: sessionBody() }, isCreate],
            ['not_found', { op: 'readSession', sessionId: 'cs_conformanceNoSuchSession' }, isSessionRead],
            ['invalid_token', { op: 'createSession', body: sessionBody() }, isCreate],
          ];
          for (const [code, ask, sameKind] of cases) {
            const answer = await s.ask(ask);
            expectAnswered(s, answer, `A request answered ${code}`);
            const sent = during(s, last(s));
            const answered = sent.find(sameKind);
            const after = sent.filter((r) => answered !== undefined && r.seq > answered.seq);
            if (after.some(sameKind) || after.some(isToken))
              s.fail(
                `After ${code} the client sent the request again${after.some(isToken) ? ' with a new token' : ''}: the document says not without a change.`,
              );
            expectReported(s, answer, code);
          }
        },
      );
    },
  },
  {
    id: 'CLIENT-010',
    clauses: ['code.guidance', 'status.400'],
    section: ERRORS,
    title: 'The four account-configuration codes are reported, not retried',
    async run(run) {
      const codes = ACCOUNT_CONFIGURATION_CODES;
      await run.scenario(
        on(isCreate, (n, r) => (n <= codes.length ? { answer: errorReply(r, 400, codes[n - 1]!) } : undefined)),
        async (s) => {
          for (const code of codes) {
            // Each create is answered with the next code, whatever the client sends.
            const answer = await s.ask({ op: 'createSession', body: sessionBody() });
            expectAnswered(s, answer, `A create answered ${code}`);
            const creates = during(s, last(s)).filter(isCreate).length;
            if (creates > 1)
              s.fail(
                `The client sent the create ${creates} times after ${code}: it is fixed in the portal, not by retrying.`,
              );
            expectReported(s, answer, code);
          }
        },
      );
    },
  },
  {
    id: 'CLIENT-011',
    clauses: ['code.open', 'ver.open-sets'],
    section: ERRORS,
    title: 'An error code the client has never seen is a generic failure: no crash, no retry',
    async run(run) {
      await run.scenario(
        on(isCreate, (n, r) => (n === 1 ? { answer: errorReply(r, 400, 'payment_method_paused') } : undefined)),
        async (s) => {
          const answer = await s.ask({ op: 'createSession', body: sessionBody() });
          expectAnswered(s, answer, 'A create answered with an error code added after the client was written');
          const creates = during(s, last(s)).filter(isCreate).length;
          expectSeen('create, so it was never answered the new code', creates);
          if (valueIn(answer)) s.fail('The client reports success for a create answered 400.');
          if (creates > 1) s.fail(`The client sent the create ${creates} times after a 400.`);
        },
      );
    },
  },
  {
    id: 'CLIENT-016',
    clauses: ['status.500', 'order.500'],
    section: ERRORS,
    title: 'internal_error is retried, waiting between tries, under the same key, and the client stops',
    async run(run) {
      await run.scenario(
        on(isCreate, (_n, r) => ({ answer: errorReply(r, 500, 'internal_error') })),
        async (s) => {
          const answer = await s.ask({ op: 'createSession', body: sessionBody() });
          expectAnswered(s, answer, 'A create answered 500 every time');
          const creates = during(s, last(s)).filter(isCreate);
          // Without a key a retry may make a second payment (Idempotency rules 3): not retrying
          // is then right, and CLIENT-004 judges the missing key.
          if (creates.length < 2 && creates[0]?.headers['idempotency-key'])
            s.fail('The client did not retry the create answered 500 (the document: retry, with exponential backoff).');
          const tries = backoffProblem(creates.map((r) => r.at));
          if (creates.length > MOST_ATTEMPTS) s.fail(`The client sent the create ${tries}.`);
          judgeRepeats(s, creates, undefined);
          if (tries) s.fail(`The client sent the create ${tries}.`);
          if (valueIn(answer)) s.fail('The client reports success, yet every attempt was answered 500.');
        },
      );
    },
  },
];
