/**
 * The reference agent's budget (input `budget`, event `budget.raise`): what its LLM calls may spend
 * over its life, checked before each call. Pure rules, no I/O; the chart (machine.ts) names them.
 *
 * - Spending is what the agent's answers reported (`usage`): tokens, and their cost in US dollars
 *   when a price is known for the agent's model (frozen in the context at spawn, so a restart with
 *   another price table does not change what was spent or what a dollar buys).
 * - An agent may start a call only while it is under every limit it has: `spent < max`. A call is not
 *   cut short, so an agent can end past its limit by what one call spent.
 * - `budget.raise` only raises: a limit given lower than (or equal to) the current one, or for a
 *   kind the agent has no limit on, changes nothing (and is refused over HTTP with a 409).
 */
import type { TokenUsage } from '../../llm/client.js';
import type { AgentBudget, AgentContext, AgentDefaults, AgentInput, BudgetRaise, LastError, ModelPrice, Spent } from './types.js';

export const BUDGET_EXCEEDED = 'budget_exceeded';

/** The prices of `defaults` for `model`, if any. */
export function priceOf(defaults: Pick<AgentDefaults, 'prices'>, model: string): ModelPrice | undefined {
  const prices = defaults.prices;
  return prices && Object.hasOwn(prices, model) ? prices[model] : undefined;
}

/**
 * The context fields of an agent spawned with `input.budget` (none without one: unlimited, and its
 * context is what it was before budgets existed).
 */
export function initialBudget(input: Pick<AgentInput, 'budget'>, price: ModelPrice | undefined): { budget: AgentBudget; spent: Spent } | undefined {
  if (!input.budget) return undefined;
  const { maxTotalTokens, maxCostUsd } = input.budget;
  return {
    budget: {
      ...(maxTotalTokens === undefined ? {} : { maxTotalTokens }),
      ...(maxCostUsd === undefined ? {} : { maxCostUsd }),
      ...(price ? { price: { inputPerMTok: price.inputPerMTok, outputPerMTok: price.outputPerMTok } } : {}),
    },
    spent: { totalTokens: 0, ...(price ? { costUsd: 0 } : {}) },
  };
}

/** Dollars with no float noise (1e-9 $ is far below any price's precision). */
const dollars = (usd: number) => Math.round(usd * 1e9) / 1e9;

/** What one call's usage costs at `price`. */
export function costOf(usage: Pick<TokenUsage, 'promptTokens' | 'completionTokens'>, price: ModelPrice): number {
  return dollars((usage.promptTokens * price.inputPerMTok + usage.completionTokens * price.outputPerMTok) / 1_000_000);
}

/** `spent` after an answer with `usage` (undefined: the agent has no budget, nothing is tracked). */
export function spend(context: Pick<AgentContext, 'budget' | 'spent'>, usage: TokenUsage): Spent | undefined {
  if (!context.budget || !context.spent) return context.spent;
  const price = context.budget.price;
  return {
    totalTokens: context.spent.totalTokens + usage.totalTokens,
    ...(price ? { costUsd: dollars((context.spent.costUsd ?? 0) + costOf(usage, price)) } : {}),
  };
}

/** The limits the agent has reached, in words (empty: under budget, or no budget). */
export function limitsReached(context: Pick<AgentContext, 'budget' | 'spent'>): string[] {
  const { budget, spent } = context;
  if (!budget || !spent) return [];
  const reached: string[] = [];
  if (budget.maxTotalTokens !== undefined && spent.totalTokens >= budget.maxTotalTokens) {
    reached.push(`${spent.totalTokens} tokens of its ${budget.maxTotalTokens} (maxTotalTokens)`);
  }
  if (budget.maxCostUsd !== undefined && (spent.costUsd ?? 0) >= budget.maxCostUsd) {
    reached.push(`$${spent.costUsd ?? 0} of its $${budget.maxCostUsd} (maxCostUsd)`);
  }
  return reached;
}

export const overBudget = (context: Pick<AgentContext, 'budget' | 'spent'>): boolean => limitsReached(context).length > 0;

/** Why the agent parks in `failed` instead of calling the LLM. */
export function budgetExceededError(context: Pick<AgentContext, 'budget' | 'spent'>): LastError {
  return {
    kind: 'permanent',
    step: 'llm',
    code: BUDGET_EXCEEDED,
    message: `The agent spent ${limitsReached(context).join(' and ')}: no LLM call is made past its budget. Send budget.raise with a higher limit to go on.`,
    attempts: 0,
  };
}

/** The budget after a `budget.raise`: each limit given that is higher than the agent's; nothing else. */
export function raisedBudget(budget: AgentBudget | undefined, raise: BudgetRaise): AgentBudget | undefined {
  if (!budget) return budget;
  const higher = (current: number | undefined, given: number | undefined) => (current !== undefined && given !== undefined && given > current ? given : current);
  const maxTotalTokens = higher(budget.maxTotalTokens, raise.maxTotalTokens);
  const maxCostUsd = higher(budget.maxCostUsd, raise.maxCostUsd);
  return { ...budget, ...(maxTotalTokens === undefined ? {} : { maxTotalTokens }), ...(maxCostUsd === undefined ? {} : { maxCostUsd }) };
}

/**
 * Why a `budget.raise` is a conflict for an agent in this state (HTTP 409), or undefined when it is
 * taken: it must raise a limit the agent has, and an agent parked in `failed` must be parked there by
 * its budget (one parked by another failure needs `retry`, not more budget). An agent not in
 * `failed` takes it for its later calls.
 */
export function refuseBudgetRaise(event: { type: string; [key: string]: unknown }, current: { state: unknown; context: unknown }): string | undefined {
  const context = (current.context ?? {}) as Partial<Pick<AgentContext, 'budget' | 'lastError'>>;
  const budget = context.budget;
  if (!budget) return 'The agent has no budget (input "budget"): it has no limit to raise.';
  if (current.state === 'failed' && context.lastError?.code !== BUDGET_EXCEEDED) {
    return `The agent is in failed for another reason (${context.lastError?.code ?? 'unknown'}), not its budget: send retry or task.skip.`;
  }
  for (const key of ['maxTotalTokens', 'maxCostUsd'] as const) {
    const given = event[key];
    if (typeof given !== 'number') continue;
    const limit = budget[key];
    if (limit === undefined) return `The agent has no ${key} limit: budget.raise only raises the limits it was spawned with.`;
    if (given <= limit) return `budget.raise only raises: ${key} ${given} is not above the agent's ${limit}.`;
  }
  return undefined;
}
