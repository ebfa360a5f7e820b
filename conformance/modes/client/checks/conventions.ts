/** CLIENT checks of the General conventions: amounts as JSON numbers in major units. */
import { type ClientCheck, createsByPayment, expectSeen, traffic } from '../scenarios.ts';
import { amountProblem, totalLiteral } from '../../../rules/client.ts';

export const conventionChecks: ClientCheck[] = [
  {
    id: 'CLIENT-005',
    clauses: ['conv.amounts', 'create.total'],
    section: 'General conventions',
    title: 'Amounts go out as JSON numbers in major units, as given, with at most two decimals',
    async run(run) {
      const s = await traffic(run);
      const payments = createsByPayment(s);
      expectSeen('create', payments.flatMap((p) => p.creates).length);
      for (const { total, creates } of payments) {
        for (const r of creates) {
          const problem = amountProblem(r.body);
          if (problem) s.fail(`Create ${r.seq} ${problem}.`);
          const literal = totalLiteral(r.body)!;
          if (Number(literal) !== total) s.fail(`Create ${r.seq} sends amount.total ${literal} for ${total}.`);
        }
      }
    },
  },
];
