/**
 * Arithmetic the built-in calculator tool does, and the simulated model works out the same way (so
 * the answer it passes to a tool is the calculator's). Here, in the lowest layer, for both.
 */

/** `+ - * /` and parentheses over decimal numbers; throws on anything else (the model is told why). */
export function evaluate(expression: string): number {
  const tokens = expression.match(/\d+(?:\.\d+)?|[-+*/()]|\S/g) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const take = () => tokens[i++];
  function primary(): number {
    const token = take();
    if (token === '(') {
      const value = sum();
      if (take() !== ')') throw new Error('a parenthesis is not closed');
      return value;
    }
    if (token === '-') return -primary();
    if (token === undefined || !/^\d/.test(token)) throw new Error(`unexpected ${token === undefined ? 'end' : `"${token}"`}`);
    return Number(token);
  }
  function product(): number {
    let value = primary();
    while (peek() === '*' || peek() === '/') value = take() === '*' ? value * primary() : value / primary();
    return value;
  }
  function sum(): number {
    let value = product();
    while (peek() === '+' || peek() === '-') value = take() === '+' ? value + product() : value - product();
    return value;
  }
  const value = sum();
  if (i < tokens.length) throw new Error(`unexpected "${tokens[i]}"`);
  if (!Number.isFinite(value)) throw new Error('the result is not a finite number');
  return value;
}
