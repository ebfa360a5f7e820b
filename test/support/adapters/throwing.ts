/** An adapter whose test environment is down: every call throws. A setup error, never a verdict. */
import type { TargetAdapter } from '@payment-service/conformance';

const adapter: TargetAdapter = {
  capabilities: ['createOrganisation', 'advanceClock'],
  async createOrganisation() {
    throw new Error('the test environment is down');
  },
  async advanceClock() {
    throw new Error('the test environment is down');
  },
};

export default adapter;
