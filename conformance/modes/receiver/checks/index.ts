/** Every receiver check, in id order (the report's): one file per section of the document. */
import type { Check, RegisteredCheck } from '../../../runner/check-definition.ts';
import { Registry } from '../../../runner/registry.ts';
import type { ReceiverContext, ReceiverUnderTest } from '../context.ts';
import { eventKindChecks } from './event-kinds.ts';
import { legacyCheck } from './legacy.ts';
import { responseChecks } from './response.ts';
import { signatureChecks } from './signature.ts';

/** The receiver checks; RCV-014 depends on --legacy (checks/legacy.ts). */
export function receiverCheckList(legacy: 'accept' | 'reject' | undefined): Check<ReceiverContext>[] {
  return [...signatureChecks, ...responseChecks, ...eventKindChecks, legacyCheck(legacy)].sort((a, b) =>
    a.id.localeCompare(b.id),
  );
}

export function createReceiverRegistry(legacy: 'accept' | 'reject' | undefined): Registry<ReceiverContext> {
  return new Registry<ReceiverContext>().register(...receiverCheckList(legacy));
}

/** The registered receiver checks for a --legacy choice (traceability and tests read their clauses). */
export function receiverChecks(options: Partial<ReceiverUnderTest>): RegisteredCheck<ReceiverContext>[] {
  return createReceiverRegistry(options.legacy).all();
}
