/** The error a promise rejects with, asserted to be one of the client's PaymentErrors. */
import { expect } from 'vitest';
import { PaymentError } from '../../client/index.ts';

export async function failure(promise: Promise<unknown>): Promise<PaymentError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PaymentError);
  return error as PaymentError;
}
