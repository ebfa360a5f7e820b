/** CLIENT checks of States and transitions: only completed is paid, and an unknown status neither fulfils nor errors. */
import { CheckSkipped } from '../../../core/outcome.ts';
import type { Answer } from '../protocol.ts';
import { isSessionRead, type Script } from '../service.ts';
import { type ClientCheck, createdId, expectAnswered, STATES, valueIn } from '../scenarios.ts';

export const stateChecks: ClientCheck[] = [
  {
    id: 'CLIENT-012',
    clauses: ['state.open', 'ver.open-sets', 'svc.read', 'state.completed'],
    section: STATES,
    title: 'A status the client has never seen is read without error, and only completed is taken as paid',
    async run(run) {
      // Each read gives the status the check names now: one the client has never seen, then
      // every status the document names but completed.
      let status = 'authorised';
      const statusNamed: Script = (r) =>
        isSessionRead(r)
          ? {
              rewrite: (reply) => {
                try {
                  const body = JSON.parse(reply.body);
                  return reply.status === 200 ? { ...reply, body: JSON.stringify({ ...body, status }) } : reply;
                } catch {
                  return reply;
                }
              },
            }
          : 'forward';
      await run.scenario(statusNamed, async (s) => {
        const id = await createdId(s);
        const read = await s.ask({ op: 'readSession', sessionId: id });
        expectAnswered(s, read, 'A session read with the status "authorised"');
        if (!valueIn(read))
          s.fail(`Reading a session whose status the client does not know fails: ${s.describe(read)}.`);
        if (valueIn(read)?.status !== 'authorised')
          s.fail(
            `The client reports status ${JSON.stringify(valueIn(read)?.status)} for a session read as "authorised".`,
          );
        for (status of ['authorised', 'created', 'pending', 'failed', 'expired']) {
          let confirmed: Answer;
          try {
            confirmed = await s.ask({ op: 'confirmPayment', sessionId: id });
          } catch (error) {
            // confirmPayment is an operation a driver may lack: the read alone is judged then.
            if (error instanceof CheckSkipped) return;
            throw error;
          }
          expectAnswered(s, confirmed, `Deciding fulfilment on the status "${status}"`);
          const value = valueIn(confirmed);
          if (!value) return s.fail(`Deciding fulfilment on the status "${status}" fails: ${s.describe(confirmed)}.`);
          if (value.paid !== false) s.fail(`The client would fulfil a session whose status is "${status}".`);
        }
      });
    },
  },
];
