// The runs feature, assembled once per service from its context and shared by every route plugin: its stores, the
// execute transaction, the finisher, and the node's dispatch, which share the runs handed out (held-runs.ts). The
// events (who waits for what) are the context's.
import type { ServiceContext } from '../context.js';
import { countFinishedRuns, countStartedRuns } from '../ops/run-metrics.js';
import { createNodeRegistry, type NodeRegistry } from '../nodes/registry.js';
import { createDispatch, type Dispatch } from './dispatch.js';
import { createRunFinisher, type FinishRun } from './finish-run.js';
import { createHeldRuns, type HeldRuns } from './held-runs.js';
import { createIdempotencyStore, type IdempotencyStore } from './idempotency.js';
import { createRunStore, type RunStore } from './run-store.js';
import { createRunStarter, type StartRun } from './start-run.js';
import { createSecretStore } from '../user-secrets/secret-store.js';
import { createSecretsOfRun, type SecretsOfRun } from '../user-secrets/run-secrets.js';

export interface Runs {
  store: RunStore;
  keys: IdempotencyStore;
  nodes: NodeRegistry;
  start: StartRun;
  finish: FinishRun;
  dispatch: Dispatch;
  /** The secrets the node that runs it is handed (docs/api.md "Secrets"). */
  secretsOf: SecretsOfRun;
  /** The runs handed out, kept for their results' one statement: PostgreSQL only (held-runs.ts). */
  held: HeldRuns | undefined;
}

const assembled = new WeakMap<ServiceContext, Runs>();

export function createRuns(ctx: ServiceContext): Runs {
  let runs = assembled.get(ctx);
  if (runs === undefined) assembled.set(ctx, (runs = assemble(ctx)));
  return runs;
}

function assemble(ctx: ServiceContext): Runs {
  const store = createRunStore(ctx.store);
  const keys = createIdempotencyStore(ctx.store);
  const nodes = createNodeRegistry(ctx.store);
  // Only PostgreSQL's finish reads them (finish-run.ts, one statement); on SQLite the rows were kept and never taken,
  // up to the bound: 20,000 runs at about 630 bytes each, some 12 MB of heap for nothing (bench:soak).
  const held = ctx.store.engine === 'postgres' ? createHeldRuns() : undefined;
  const finish = countFinishedRuns(ctx, createRunFinisher(ctx, store, keys, held));
  const secretsOf = createSecretsOfRun(ctx.store, createSecretStore(ctx.store, ctx.vault, ctx.clock));
  return {
    store,
    keys,
    nodes,
    start: countStartedRuns(ctx, createRunStarter(ctx, store, keys, nodes)),
    finish,
    dispatch: createDispatch(ctx, { runs: store, nodes, finish, events: ctx.runEvents, secretsOf, held }),
    secretsOf,
    held,
  };
}
