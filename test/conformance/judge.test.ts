/**
 * The one judge every mode's checks go through (conformance/runner/judge.ts): how each way
 * a check can end becomes a result, whatever the check runs against, so that `run`,
 * `receiver` and `client` cannot give one outcome two verdicts.
 */
import { describe, expect, it } from 'vitest';
import { AdapterError } from '../../conformance/core/adapter.ts';
import { Redactor } from '../../conformance/core/redact.ts';
import type { RegisteredCheck } from '../../conformance/runner/check-definition.ts';
import { type Judging, judge, judgeAll } from '../../conformance/runner/judge.ts';
import {
  CheckFailure,
  CheckSkipped,
  NoVerdict,
  type Result,
  SetupError,
  SuiteTooLate,
} from '../../conformance/core/outcome.ts';

/** A context of no mode of ours: the judge must not care what a check runs against. */
interface Ctx {
  signal: AbortSignal;
  note: string;
}

const SECRET = 'sk_test_judge_secret';

function check(run: (ctx: Ctx) => Promise<void>, extra: Partial<RegisteredCheck<Ctx>> = {}): RegisteredCheck<Ctx> {
  return {
    id: 'ABC-001',
    clauses: ['limit.total'],
    level: 'must',
    rule: 'limit.total (Limits)',
    section: 'Limits',
    title: 'a check of the test',
    run,
    ...extra,
  };
}

function judging(overrides: Partial<Judging<Ctx>> = {}): Judging<Ctx> {
  const redactor = new Redactor();
  redactor.remember(SECRET, '$CLIENT_SECRET');
  return {
    contextFor: (_check, signal) => ({ signal, note: '' }),
    offers: () => true,
    redactor,
    strictAssumptions: false,
    timeLimitMs: () => undefined,
    ...overrides,
  };
}

const fails = (error: unknown) => check(async () => Promise.reject(error));

describe('the judge of every mode', () => {
  const rows: Array<{
    given: string;
    check: RegisteredCheck<Ctx>;
    judging?: Partial<Judging<Ctx>>;
    want: Partial<Result>;
  }> = [
    { given: 'a check that returns', check: check(async () => undefined), want: { status: 'passed', reason: '' } },
    {
      given: 'a check that returns, with a note',
      check: check(async (ctx) => {
        ctx.note = 'explored 12 cases';
      }),
      judging: { note: (ctx) => ctx.note },
      want: { status: 'passed', reason: 'explored 12 cases' },
    },
    {
      given: 'a check that finds it cannot run',
      check: fails(new CheckSkipped('no profile fits', ['attempt'])),
      want: { status: 'skipped', reason: 'no profile fits', missing: ['attempt'] },
    },
    {
      given: 'an adapter call that fails',
      check: fails(new AdapterError('attempt failed')),
      want: { status: 'error', cause: 'adapter', reason: 'attempt failed' },
    },
    {
      given: 'a target that leaves nothing to judge',
      check: fails(new NoVerdict('throttled')),
      want: { status: 'error', cause: 'no-verdict' },
    },
    {
      given: 'a suite too late to judge',
      check: fails(new SuiteTooLate('The read came back late.')),
      want: { status: 'error', cause: 'no-verdict' },
    },
    {
      given: 'a setup the check could not make',
      check: fails(new SetupError(`--client-id: refused (${SECRET})`)),
      want: { status: 'error', cause: 'setup', reason: '--client-id: refused ($CLIENT_SECRET)' },
    },
    {
      given: 'an assertion that fails, with evidence holding a secret',
      check: fails(
        new CheckFailure('refused', {
          evidence: { request: `clientSecret=${SECRET}`, response: SECRET, curl: 'curl x' },
        }),
      ),
      want: {
        status: 'failed',
        reason: 'refused',
        evidence: { request: 'clientSecret=$CLIENT_SECRET', response: '$CLIENT_SECRET', curl: 'curl x' },
      },
    },
    {
      given: 'an assertion that fails, naming fewer clauses than the check cites',
      check: fails(new CheckFailure('broken', undefined, ['limit.reference'])),
      want: { status: 'failed', clauses: ['limit.reference'] },
    },
    {
      given: 'an assumption check that fails',
      check: check(async () => Promise.reject(new CheckFailure('other rule')), {
        level: 'assumption',
        assumption: 'our rule',
      }),
      want: { status: 'differs', assumption: 'our rule' },
    },
    {
      given: 'an assumption check that fails, under --strict-assumptions',
      check: check(async () => Promise.reject(new CheckFailure('other rule')), {
        level: 'assumption',
        assumption: 'our rule',
      }),
      judging: { strictAssumptions: true },
      want: { status: 'failed' },
    },
    {
      given: 'an unexpected throw',
      check: fails(new TypeError('x is undefined')),
      want: { status: 'failed', reason: 'The check could not complete: TypeError: x is undefined' },
    },
    {
      given: 'a check needing capabilities the adapter lacks',
      check: check(async () => Promise.reject(new Error('must not run')), {
        requires: ['attempt', 'advanceClock'],
      }),
      judging: { offers: (c) => c === 'createOrganisation' },
      want: {
        status: 'skipped',
        reason: 'needs advanceClock, attempt (the adapter does not offer them)',
        missing: ['advanceClock', 'attempt'],
        requires: ['advanceClock', 'attempt'],
      },
    },
    {
      given: 'a check needing a capability, with no adapter in play',
      check: check(async () => undefined, { requires: ['attempt'] }),
      judging: { offers: undefined },
      want: { status: 'passed' },
    },
    {
      given: 'a check the mode blocks before it starts',
      check: check(async () => Promise.reject(new Error('must not run')), { webhooks: true }),
      judging: { blocked: () => ({ status: 'error', reason: 'no webhook reached the receiver' }) },
      want: { status: 'error', cause: 'setup', reason: 'no webhook reached the receiver' },
    },
  ];
  for (const row of rows) {
    it(`judges ${row.given}`, async () => {
      expect(await judge(row.check, judging(row.judging))).toMatchObject(row.want);
    });
  }

  it('fails a check that runs out of time, and aborts what it is still doing', async () => {
    let signal: AbortSignal | undefined;
    const result = await judge(
      check(
        (ctx) =>
          new Promise((_, reject) => {
            signal = ctx.signal;
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
          }),
      ),
      judging({ timeLimitMs: () => 50 }),
    );
    expect(result).toMatchObject({ status: 'failed', reason: 'The check did not finish within 0.05 s.' });
    expect(signal?.aborted).toBe(true);
  });

  it('judges the after checks once the main ones ended, slow ones first, and reports in the given order', async () => {
    const started: string[] = [];
    const named = (id: string, extra: Partial<RegisteredCheck<Ctx>> = {}) =>
      check(async () => void started.push(id), { id, ...extra });
    const results = await judgeAll(
      [named('ABC-001', { phase: 'after' }), named('ABC-002'), named('ABC-003', { slow: true })],
      judging(),
      { concurrency: 1 },
    );
    expect(results.map((r) => r.id)).toEqual(['ABC-001', 'ABC-002', 'ABC-003']);
    expect(started).toEqual(['ABC-003', 'ABC-002', 'ABC-001']);
  });
});
