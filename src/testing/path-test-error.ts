/** A failed expectation of a path test, naming the path and the step. */
export class PathTestError extends Error {
  constructor(
    message: string,
    readonly expected?: unknown,
    readonly actual?: unknown,
  ) {
    super(message);
    this.name = 'PathTestError';
  }
}
