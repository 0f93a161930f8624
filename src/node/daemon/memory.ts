// A periodic full garbage collection for the long-lived daemon (docs/operations.md "Benchmarks", bench:daemon: no
// growth). Under a steady trickle of runs, V8 promotes short-lived request objects into its old generation and, with
// a heap this small (~10 MB live), postpones the major collection until that generation has grown by half or more;
// measured with bench:daemon, RSS climbed from 73 to 83 MB over 1,000 runs before the first one, while the live heap
// stayed flat. One collection a minute (a few milliseconds for such a heap) keeps the resident set at its working size.
//
// And no optimizing compile of WebAssembly (bench:daemon's goal: peak ≤ 80 MB). undici parses HTTP with llhttp
// compiled to WebAssembly; V8 first compiles it with its baseline compiler (Liftoff), then, in the background, with
// TurboFan, whose compile of llhttp's one huge state-machine function takes about 34 MB for a fraction of a second
// and keeps about 9 MB more resident after. Measured with bench:daemon on Node 20: the start-up high-water mark went
// from 101 MB to 67 MB and the idle resident set from 76 MB to 66 MB. The daemon parses a few responses a second, which
// baseline code does well.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export const FULL_GC_INTERVAL_MS = 60_000;

/** The engine's `gc`, exposed at run time (node --expose-gc does it at start); undefined if the engine refuses. */
function exposedGc(): (() => void) | undefined {
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as () => void) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * WebAssembly compiled from now on stays on the baseline compiler. Called before the first request: undici compiles
 * llhttp at its first connection. A flag the engine does not know is ignored.
 */
export function keepWasmOnBaselineCompiler(): void {
  setFlagsFromString('--liftoff-only');
}

/** Collects every `intervalMs` until the returned function is called; the timer never keeps the process alive. */
export function collectPeriodically(intervalMs: number = FULL_GC_INTERVAL_MS): () => void {
  const gc = exposedGc();
  if (gc === undefined) return () => undefined;
  const timer = setInterval(gc, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
