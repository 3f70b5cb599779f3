// For tests of operations that must fail with a coded OperationError, never anything else.
import { expect } from 'vitest';
import { OperationError } from '../../src/core/errors.js';

/** The coded error `p` fails with (a test failure if it does not fail, or fails uncoded). */
export async function codedFailure(p: Promise<unknown>): Promise<OperationError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(OperationError);
    return e as OperationError;
  }
  throw new Error('expected a failure');
}
