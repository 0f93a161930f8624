// swarm-node status: one look at the node. It reports problems in the report; it exits 0 but for a service it cannot
// reach (6, after the report: scripts check the exit code), and `doctor` diagnoses.
import { Command } from 'commander';
import { SvcError } from '../../contract/errors.js';
import { formatDollars } from '../../contract/money.js';
import { contextFor } from '../context.js';
import type { AgentSchedule, DaemonStatus } from '../../node/store/daemon-state.js';
import { keyValues } from '../table.js';

export function statusCommand(): Command {
  return new Command('status')
    .description('show the configuration in force, the service, the token, registrations, the database and the daemon')
    .addHelpText(
      'after',
      '\nExits 0 with the report, problems included, but 6 after it when the service cannot be reached.\n\nExample:\n  $ swarm-node status\n  $ swarm-node status --json | jq .problems',
    )
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const { nodeStatus } = await import('../../node/host/status.js');
      const status = await nodeStatus({
        config: ctx.config(),
        paths: ctx.paths,
        clock: ctx.clock,
        credentials: () => ctx.credentials(),
        client: () => ctx.client(),
        store: () => ctx.store(),
      });
      ctx.output.result(status, (s, style) => {
        const ok = (text: string): string => style.green(text);
        const bad = (text: string): string => style.red(text);
        const config = Object.entries(s.config.values).map(
          ([key, value]) =>
            [`  ${key}`, `${String(value)}  ${style.dim(`(${s.config.sources[key as keyof typeof s.config.sources]})`)}`] as [
              string,
              string,
            ],
        );
        const token = !s.token.stored
          ? bad('not signed in')
          : `${s.token.sub} · ${s.token.tier} · expires ${s.token.expires_at} (${s.token.days_left} days) · ${
              s.token.valid === true ? ok('valid') : s.token.valid === false ? bad(`invalid: ${s.token.reason}`) : 'not verified'
            }`;
        const agents = s.registrations.agents
          .map(
            (a) =>
              `${a.agent_id} (${a.every === null ? 'manual' : `every ${a.every}`}${a.daily_cap_cents === null ? '' : `, cap ${formatDollars(a.daily_cap_cents)}`})`,
          )
          .join(', ');
        const lines = keyValues([
          ['config', s.config.file],
          ...config,
          [
            'node',
            s.node.enrolled
              ? `${ok(s.node.node_id!)} of ${s.node.user_id} (${s.node.tier_id})${s.node.ephemeral ? ', ephemeral: one run, then it removes itself' : ''}`
              : bad('not enrolled'),
          ],
          [
            '  agent isolation',
            s.node.isolation === null ? bad(s.node.isolation_error ?? '-') : (s.node.isolation_summary ?? s.node.isolation),
          ],
          ...(s.node.isolation_warning === null ? [] : [['  warning', style.yellow(s.node.isolation_warning)] as [string, string]]),
          ...s.node.isolation_cannot.map((line) => ['  not held', style.yellow(line)] as [string, string]),
          [
            'service',
            s.service.reachable
              ? `${ok('reachable')} ${s.service.base_url} (${s.service.latency_ms} ms)`
              : `${bad('unreachable')} ${s.service.error}`,
          ],
          ['token', token],
          ['registrations', s.registrations.count === 0 ? 'none' : `${s.registrations.count}: ${agents}`],
          [
            'database',
            `${s.database.path}${s.database.exists ? '' : ' (not created yet)'}${s.database.error === null ? '' : ` ${bad(s.database.error)}`}`,
          ],
          ['daemon', daemonLine(s.daemon, ok)],
          ...(s.journal_fault === null
            ? []
            : [
                [
                  '  journal',
                  bad(`cannot be written since ${s.journal_fault.since} (${s.journal_fault.reason}): no run is taken until it can`),
                ] as [string, string],
              ]),
          ...(s.daemon.running && s.daemon.paused !== null
            ? [
                [
                  '  held',
                  bad(
                    `every agent: ${s.daemon.paused.reason} since ${s.daemon.paused.since ?? '-'}${s.daemon.paused.until === null ? '' : `, next check ${s.daemon.paused.until}`}`,
                  ),
                ] as [string, string],
              ]
            : []),
          ...(s.daemon.drained_since === null || s.daemon.drained_since === undefined
            ? []
            : [
                [
                  '  drained',
                  bad(
                    `since ${s.daemon.drained_since}: the service sends this node no new run (swarm-node nodes resume ${s.node.node_id ?? '<node_id>'})`,
                  ),
                ] as [string, string],
              ]),
          ...s.daemon.agents.map((a) => [`  ${a.agent_id}`, scheduleLine(a, bad)] as [string, string]),
        ]);
        return s.problems.length === 0 ? lines : `${lines}\n\n${s.problems.map((p) => style.yellow(`! ${p}`)).join('\n')}`;
      });
      if (!status.service.reachable) {
        throw new SvcError(
          'service_unreachable',
          `the service at ${status.service.base_url} cannot be reached: ${status.service.error ?? 'no answer'}`,
        );
      }
    });
}

/** Running: pid and last tick; stopped: when it last ticked or stopped, so a dead daemon is told from a never-run one. */
function daemonLine(daemon: DaemonStatus, ok: (text: string) => string): string {
  if (daemon.running)
    return `${ok('running')} pid ${daemon.pid}, last tick ${daemon.last_tick_at ?? '-'}${daemon.version === null ? '' : `, version ${daemon.version}`}`;
  if (daemon.stopped_at !== null) return `not running (stopped ${daemon.stopped_at})`;
  if (daemon.last_tick_at !== null) return `not running (last tick ${daemon.last_tick_at})`;
  return 'not running';
}

/** An interval an earlier release kept here: the daemon moves it to the service at its next start. */
function scheduleLine(agent: AgentSchedule, bad: (text: string) => string): string {
  const last = agent.last_run_at === null ? '' : `, last run ${agent.last_run_at}`;
  return `${bad('not moved to the service yet')} (the daemon moves it when it starts)${agent.paused_reason === null ? '' : `, paused: ${agent.paused_reason}`}${last}`;
}
