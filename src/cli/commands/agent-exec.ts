// swarm-node agent-exec: what systemd runs for each agent run on an installed node (svc-swarm-node-agent@.service,
// one per connection to the agent socket). Not a command for people: it reads the daemon's request on stdin and
// answers on stdout (src/node/runner/agent-exec.ts). It reads no configuration and no credential: in its sandbox
// the node's etc/ and var/ do not exist.
import { Command } from 'commander';

export function agentExecCommand(): Command {
  return new Command('agent-exec')
    .description('run one agent for the daemon, inside the sandbox systemd made for it (started by svc-swarm-node-agent.socket)')
    .addHelpText(
      'after',
      "\nStarted by systemd, never by hand: its stdin and stdout are the daemon's connection.\n\nExample:\n  $ systemctl status 'svc-swarm-node-agent@*'",
    )
    .action(async () => {
      const { serveAgentExec } = await import('../../node/runner/agent-exec.js');
      await serveAgentExec(process.stdin, process.stdout);
    });
}
