// What a long-lived signal holds of the calls that used it: Node's own record of the signals AbortSignal.any() made
// from it (lib/internal/abort_controller.js, kept while the source lives: nodejs/node#55351). 0 where Node has none.
export function dependantsOf(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((symbol) => symbol.description === 'kDependantSignals');
  return key === undefined ? 0 : ((signal as unknown as Record<symbol, Set<unknown> | undefined>)[key]?.size ?? 0);
}
