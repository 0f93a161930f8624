// swarm-node labels [list] | add | remove: the labels this node carries, which a run may require (docs/api.md
// "Labels"). The config file holds them (src/node/agents/labels.ts); the service routes by the set it was last sent.
import { Command } from 'commander';
import { MAX_LABELS } from '../../contract/labels.js';
import { contextFor, type CommandContext } from '../context.js';

const RULE = `A label is 1-63 letters, digits, dots, underscores or hyphens, starting with a letter or digit; letters are
compared without case and kept lowercase. A node carries at most ${MAX_LABELS}.`;

export function labelsCommand(): Command {
  const labels = new Command('labels')
    .description('show the labels this node carries; `labels add|remove` to change them')
    .addHelpText(
      'after',
      `
A run that names labels (swarm-node run --label, execute's "labels") goes only to an online node that carries all
of them, the way GitHub's runner labels and Buildkite's agent tags route jobs.
${RULE}
The labels live in the node's config file (set first by install --label) and are sent to the service at each
change and by the daemon when it starts; swarm-node nodes shows what the service routes by.

Example:
  $ swarm-node labels
  $ sudo swarm-node labels add gpu linux-x64
  $ sudo swarm-node labels remove gpu`,
    )
    .action(async (_options: unknown, command: Command) => showLabels(contextFor(command)));

  labels
    .command('list')
    .description('show the labels this node carries (the same as `labels`)')
    .addHelpText('after', '\nExample:\n  $ swarm-node labels list --json')
    .action(async (_options: unknown, command: Command) => showLabels(contextFor(command)));

  labels
    .command('add')
    .description('add labels to this node and tell the service')
    .argument('<label...>', 'labels, each its own argument or several separated by commas')
    .addHelpText('after', `\n${RULE}\n\nExample:\n  $ sudo swarm-node labels add gpu\n  $ sudo swarm-node labels add linux-x64,zone.eu-1`)
    .action(async (values: string[], _options: unknown, command: Command) => changeLabels(contextFor(command), { add: values }));

  labels
    .command('remove')
    .description('remove labels from this node and tell the service')
    .argument('<label...>', 'labels, each its own argument or several separated by commas')
    .addHelpText('after', '\nExample:\n  $ sudo swarm-node labels remove gpu')
    .action(async (values: string[], _options: unknown, command: Command) => changeLabels(contextFor(command), { remove: values }));

  return labels;
}

async function showLabels(ctx: CommandContext): Promise<void> {
  const { readNodeLabels } = await import('../../node/agents/labels.js');
  const labels = readNodeLabels(ctx.paths.configFile) ?? [];
  const nodeId = ctx.credentials().node?.node_id ?? null;
  ctx.output.result({ node_id: nodeId, labels, file: ctx.paths.configFile }, (r) =>
    r.labels.length === 0
      ? 'No labels: runs that name labels do not come here (swarm-node labels add --help says how to add them).'
      : r.labels.join('\n'),
  );
}

async function changeLabels(ctx: CommandContext, change: { add?: string[]; remove?: string[] }): Promise<void> {
  const [{ parseLabelArguments }, labels] = await Promise.all([import('../../contract/labels.js'), import('../../node/agents/labels.js')]);
  // Checked before anything is read or sent: a bad label changes nothing.
  const parsed = {
    ...(change.add === undefined ? {} : { add: parseLabelArguments(change.add) }),
    ...(change.remove === undefined ? {} : { remove: parseLabelArguments(change.remove) }),
  };
  const node = await ctx.requireNode();
  const result = await labels.changeLabels(ctx.paths.configFile, node, parsed);
  for (const label of result.not_carried) ctx.output.warn(`${label} was not a label of this node`);
  ctx.output.result(
    result,
    (r) => `Labels of node ${r.node_id}: ${r.labels.join(', ') || '(none)'}${r.sent ? '; the service routes by them now' : ''}.`,
  );
  if (!result.sent && result.send_error !== undefined)
    ctx.output.warn(`the service was not told (${result.send_error}); the daemon sends them at its next contact`);
}
