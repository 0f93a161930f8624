// The one rule for changing a spending limit (docs/api.md "Budgets", "Step-up"): a change that lets more be spent
// needs a recent sign-in, as a change of the fleet or the code does, since a cap is what bounds the loss from a JWT
// copied off a disk; a change that lets less be spent never does, so a user whose token leaked can cut spending at
// once with whatever token they have. Every limit on spending (budgets, and any added later) asks this function.

/** A limit on what may be spent in a period: cents, or null where none is set (no limit). */
export type SpendingLimit = number | null;

/** Whether changing a limit from `before` to `after` lets more be spent: a higher figure, or no limit at all. */
export function raisesLimit(before: SpendingLimit, after: SpendingLimit): boolean {
  // A first limit where none was lowers it (from unlimited); removing one raises it to unlimited.
  if (after === null) return before !== null;
  return before !== null && after > before;
}
