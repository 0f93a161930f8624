// This node's labels (docs/api.md "Labels"): kept in its config file (`labels`, written by install --label and by
// `swarm-node labels add|remove`), which is the truth; the service's set follows it. A change is written here first
// and then sent at once; when the service cannot be told now, the daemon sends the file's set at its next contact
// (its start, and every return of the service), as it does with the agents a node serves.
import { SvcError, messageOf } from '../../contract/errors.js';
import { assertLabelCount, isLabel, normalizeLabels } from '../../contract/labels.js';
import { readConfigFile, writeConfigFile } from '../host/config.js';
import type { ThisNode } from './registrations.js';

/** The labels in the config file; undefined when it has none set (the daemon then sends nothing). */
export function readNodeLabels(configFile: string): string[] | undefined {
  const { labels } = readConfigFile(configFile);
  if (labels === undefined) return undefined;
  if (!Array.isArray(labels) || !labels.every((label) => typeof label === 'string' && isLabel(label))) {
    throw new SvcError('local_state', `the labels in ${configFile} are not a list of labels`, {
      remedy: `Fix "labels" in ${configFile}, or remove it there and set them again: swarm-node labels add writes a valid list (swarm-node labels add --help).`,
    });
  }
  return normalizeLabels(labels);
}

export interface LabelsChange {
  node_id: string;
  labels: string[];
  /** Asked to remove, and not a label of this node: nothing to do for them. */
  not_carried: string[];
  /** The service routes by these now; false: it could not be told now, the daemon tells it later. */
  sent: boolean;
  /** Why it could not be told. */
  send_error?: string;
}

/** `labels add|remove`: the config file's set changed and written, then sent to the service. */
export async function changeLabels(configFile: string, node: ThisNode, change: { add?: readonly string[]; remove?: readonly string[] }): Promise<LabelsChange> {
  const current = readNodeLabels(configFile) ?? [];
  const remove = change.remove ?? [];
  const labels = normalizeLabels([...current, ...(change.add ?? [])]).filter((label) => !remove.includes(label));
  assertLabelCount(labels, 'this node would carry');
  writeConfigFile(configFile, { ...readConfigFile(configFile), labels });
  const result = { node_id: node.node_id, labels, not_carried: remove.filter((label) => !current.includes(label)) };
  try {
    await node.api.setLabels(labels);
    return { ...result, sent: true };
  } catch (error) {
    return { ...result, sent: false, send_error: messageOf(error) };
  }
}
