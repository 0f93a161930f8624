// Routing by labels on the service's side (docs/api.md "Labels"): the labels a run requires are recorded with it,
// a node takes it only when it carries every one of them (the condition below, in the queries that hand runs to
// nodes and fail the ones no node can take), and an execute that no online node can serve for its labels is told
// which labels are missing.
import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import { SvcError } from '../../contract/errors.js';
import type { Store } from '../store/store.js';
import type { NodeRegistry } from './registry.js';

/**
 * SQL: the node carries every label the run requires (true for a run that requires none). `runId` a reference to
 * the run's id column; `nodeId` a node id, or a reference to a node's id column.
 */
export function carriesRunLabels(runId: Expression<string>, nodeId: string | Expression<string>): RawBuilder<SqlBool> {
  return sql<SqlBool>`NOT EXISTS (SELECT 1 FROM run_labels rl WHERE rl.run_id = ${runId} AND rl.label NOT IN (SELECT nl.label FROM node_labels nl WHERE nl.node_id = ${nodeId}))`;
}

/** What a new run requires; in the transaction that inserts it. */
export async function recordRunLabels(store: Store, runId: string, labels: readonly string[]): Promise<void> {
  if (labels.length === 0) return;
  await store.db
    .insertInto('run_labels')
    .values(labels.map((label) => ({ run_id: runId, label })))
    .execute();
}

/** The labels a run asked for, put on a node: the command that does it, on that node. */
function remedyFor(labels: readonly string[]): string {
  return `Add the labels to a node that serves the agent (on it: swarm-node labels add ${labels.join(' ')}), or ask only for labels one of your nodes carries (your nodes and their labels: swarm-node nodes).`;
}

/** A node's own run executes on it: it must carry the labels it asks for. */
export async function assertOwnLabels(nodes: NodeRegistry, nodeId: string, agentId: string, labels: readonly string[]): Promise<void> {
  if (labels.length === 0) return;
  const carried = await nodes.labelsOf(nodeId);
  const missing = labels.filter((label) => !carried.includes(label));
  if (missing.length === 0) return;
  throw new SvcError(
    'no_node_available',
    `no node can run ${agentId} now: this node (${nodeId}) runs its own runs and does not carry the label${plural(missing)} ${missing.join(', ')}; nothing was charged`,
    {
      remedy: `Add the labels to this node (swarm-node labels add ${missing.join(' ')}), or ask for the run signed in from elsewhere so the service routes it.`,
      extensions: { agent_id: agentId, node_id: nodeId, labels: [...labels], missing_labels: missing },
    },
  );
}

/**
 * When online nodes serve the agent (the pinned one, if named) but none carries all of `labels`: 409 naming the
 * labels none of them carries (or, when each is carried by one of them, that no one node carries them all). Returns
 * when no node serves the agent online at all: that is the reason to give, labels or not.
 */
export async function assertLabelsAvailable(
  nodes: NodeRegistry,
  query: { userId: string; agentId: string; onlineSince: number | undefined; pinned: string | undefined },
  labels: readonly string[],
): Promise<void> {
  const { userId, agentId, onlineSince, pinned } = query;
  // No onlineSince: the run may wait, so what counts is the nodes that serve the agent, online or not.
  const serving =
    onlineSince === undefined
      ? await nodes.serving(userId, agentId, pinned)
      : await nodes.servingOnline(userId, agentId, onlineSince, pinned);
  if (serving.length === 0) return;
  const yours = onlineSince === undefined ? 'your nodes' : 'your online nodes';
  const carried = new Set((await Promise.all(serving.map((node) => nodes.labelsOf(node.node_id)))).flat());
  // Labels none of them carries; none such when each is carried by one of them, and no one node carries them all.
  const missing = labels.filter((label) => !carried.has(label));
  const why =
    missing.length === 0
      ? `no one of ${yours} that serve ${agentId} carries all of the labels ${labels.join(', ')}`
      : pinned === undefined
        ? `none of ${yours} that serve ${agentId} carries the label${plural(missing)} ${missing.join(', ')}`
        : `node ${pinned} does not carry the label${plural(missing)} ${missing.join(', ')}`;
  throw new SvcError('no_node_available', `no node can run ${agentId} now: ${why}; nothing was charged`, {
    remedy: remedyFor(missing.length === 0 ? labels : missing),
    extensions: { agent_id: agentId, ...(pinned === undefined ? {} : { node_id: pinned }), labels: [...labels], missing_labels: missing },
  });
}

function plural(labels: readonly string[]): string {
  return labels.length === 1 ? '' : 's';
}
