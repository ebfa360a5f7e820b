/**
 * `--adapter manual`: a person makes each payment attempt on the hosted payment page.
 * For each, the suite prints the page's address and what to do, then waits (at most
 * `--manual-timeout`) until the payment reads back as that outcome leaves it. One request
 * at a time, so that the instructions never interleave. Its only capability is `attempt`;
 * the checks that need any other are skipped, naming it.
 */
import type { AttemptTarget, Outcome, Rail, TargetAdapter } from '../../core/adapter.ts';
import { CheckSkipped } from '../../core/outcome.ts';

export interface ManualOptions {
  /** Where the instructions go (the console). */
  out: { write(text: string): void };
  timeoutMs: number;
  /** The payment's hosted page, when the run created the payment and was told it. */
  pageOf(target: AttemptTarget): string | undefined;
  /** The payment's status through the public API, or undefined when it cannot be read. */
  statusOf(target: AttemptTarget): Promise<string | undefined>;
  pollMs?: number;
}

/** What each outcome leaves the payment reading (States and transitions). */
const EXPECTED: Record<Outcome, string> = { succeeded: 'completed', declined: 'failed', pending: 'pending' };
const RAIL: Record<Rail, string> = { card: 'card', open_banking: 'bank transfer (open banking)' };

function instruction(rail: Rail, outcome: Outcome): string {
  if (outcome === 'succeeded') return `pay by ${RAIL[rail]}, so that the payment succeeds`;
  if (outcome === 'declined') return `make a ${RAIL[rail]} payment that is declined`;
  return `start a ${RAIL[rail]} payment and leave it pending`;
}

export function manualAdapter(options: ManualOptions): TargetAdapter {
  let queue: Promise<unknown> = Promise.resolve();
  let count = 0;

  async function attempt(target: AttemptTarget, rail: Rail, outcome: Outcome): Promise<{ redirectTo: string | null }> {
    if (target.kind === 'transaction') {
      throw new CheckSkipped(
        'a manual attempt on a legacy transaction cannot be confirmed: its status cannot be read back through the API',
      );
    }
    const page = options.pageOf(target);
    if (!page) throw new Error(`no hosted page address is known for ${target.kind} ${target.id}`);
    count += 1;
    const expected = EXPECTED[outcome];
    options.out.write(
      `\n>> Action ${count}: open ${page}\n   and ${instruction(rail, outcome)}.\n` +
        `   Waiting up to ${Math.round(options.timeoutMs / 1000)} s for the ${target.kind.replace('-', ' ')} to read ${expected}…\n`,
    );
    const deadline = Date.now() + options.timeoutMs;
    let last: string | undefined;
    for (;;) {
      last = await options.statusOf(target);
      if (last === expected) break;
      if (Date.now() >= deadline) {
        throw new Error(
          `${target.kind} ${target.id} did not read ${expected} within ${Math.round(options.timeoutMs / 1000)} s (it reads ${last ?? 'nothing'})`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 1000));
    }
    options.out.write(`   done: it reads ${expected}.\n`);
    // Where the payer's browser went is not known to the suite: the checks about the redirect are skipped.
    return { redirectTo: null };
  }

  return {
    capabilities: ['attempt'],
    attempt(target, rail, outcome) {
      const turn = queue.then(() => attempt(target, rail, outcome));
      queue = turn.catch(() => undefined);
      return turn;
    },
  };
}
