/** An adapter that can only make organisations: every other check is skipped, naming what it needs. */
import type { AdapterFactory } from '@payment-service/conformance';
import { sandboxCalls } from './sandbox-calls.ts';

const createAdapter: AdapterFactory = ({ baseUrl }) => ({
  capabilities: ['createOrganisation'],
  createOrganisation: sandboxCalls(baseUrl).createOrganisation,
});

export default createAdapter;
