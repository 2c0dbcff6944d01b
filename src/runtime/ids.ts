import { randomUUID } from 'node:crypto';
import { InvalidIdError } from '../errors.js';

const ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Contract: ids are 1–128 characters from `A-Z a-z 0-9 . _ - :`. */
export function assertValidId(id: string): void {
  if (!ID.test(id)) throw new InvalidIdError(id);
}

export function generateId(): string {
  return randomUUID();
}
