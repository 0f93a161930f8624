// The runs feature, assembled once per route plugin from the service's context: its stores, the execute
// transaction, the finisher, and the node's dispatch. The events (who waits for what) are the context's, shared by
// every plugin.
import type { ServiceContext } from '../context.js';
import { countFinishedRuns, countStartedRuns } from '../ops/run-metrics.js';
import { createNodeRegistry, type NodeRegistry } from '../nodes/registry.js';
import { createDispatch, type Dispatch } from './dispatch.js';
import { createRunFinisher, type FinishRun } from './finish-run.js';
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
}

export function createRuns(ctx: ServiceContext): Runs {
  const store = createRunStore(ctx.store);
  const keys = createIdempotencyStore(ctx.store);
  const nodes = createNodeRegistry(ctx.store);
  const finish = countFinishedRuns(ctx, createRunFinisher(ctx, store, keys));
  const secretsOf = createSecretsOfRun(ctx.store, createSecretStore(ctx.store, ctx.vault, ctx.clock));
  return {
    store,
    keys,
    nodes,
    start: countStartedRuns(ctx, createRunStarter(ctx, store, keys, nodes)),
    finish,
    dispatch: createDispatch(ctx, { runs: store, nodes, finish, events: ctx.runEvents, secretsOf }),
    secretsOf,
  };
}
