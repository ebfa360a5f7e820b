/** An adapter whose clock control says yes and does nothing: the suite must notice, not blame the target. */
import type { AdapterFactory } from '@payment-service/conformance';
import { sandboxCalls } from './sandbox-calls.ts';

const createAdapter: AdapterFactory = ({ baseUrl }) => ({
  capabilities: ['createOrganisation', 'advanceClock'],
  createOrganisation: sandboxCalls(baseUrl).createOrganisation,
  async advanceClock() {},
});

export default createAdapter;
