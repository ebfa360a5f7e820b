/** RCV checks of Event kinds (Events): an event value the document does not name is answered 2xx. */
import type { Check } from '../../../runner/check-definition.ts';
import { type ReceiverContext, UNKNOWN_EVENT } from '../context.ts';

const KINDS = 'Events: Event kinds';

export const eventKindChecks: Check<ReceiverContext>[] = [
  {
    id: 'RCV-010',
    clauses: ['event.unknown'],
    section: KINDS,
    title: 'a signed delivery with an unknown event value is answered 2xx',
    run: async (r) =>
      r.accepts('An unknown event value', await r.signed(JSON.stringify(await r.event({ event: UNKNOWN_EVENT })))),
  },
];
