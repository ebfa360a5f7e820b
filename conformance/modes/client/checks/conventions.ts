/** CLIENT checks of the General conventions: amounts as JSON numbers in major units. */
import { type ClientCheck, createsByPayment, expectSeen, traffic } from '../scenarios.ts';

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
          const literal = /"total"\s*:\s*(-?[0-9.eE+-]+|"[^"]*")/.exec(r.body)?.[1];
          if (literal === undefined) return s.fail(`Create ${r.seq} has no amount.total.`);
          if (literal.startsWith('"'))
            s.fail(`Create ${r.seq} sends amount.total as the string ${literal}, not a JSON number.`);
          if (Number(literal) !== total) s.fail(`Create ${r.seq} sends amount.total ${literal} for ${total}.`);
          if (decimals(literal) > 2)
            s.fail(`Create ${r.seq} sends amount.total as ${literal}: more than two decimal places.`);
        }
      }
    },
  },
];

/** Decimal places of a JSON number literal's value (2.5e1 has none, 1.005 three). */
function decimals(literal: string): number {
  const [mantissa, exponent = '0'] = literal.toLowerCase().split('e');
  const fraction = (mantissa!.split('.')[1] ?? '').replace(/0+$/, '');
  return Math.max(0, fraction.length - Number(exponent));
}
