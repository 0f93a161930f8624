// swarm-node daemon: the foreground process systemd supervises (svc-swarm-node.service). It runs the registered
// agents on their intervals and logs one logfmt line per event on stdout (src/node/daemon/log.ts).
import { Command, InvalidArgumentError, Option } from 'commander';
import { SvcError } from '../../contract/errors.js';
import {
  DEFAULT_BACKOFF_MS,
  DEFAULT_DRAIN_MS,
  MAX_BACKOFF_MS,
  OUTAGE_PROBE_CAP_MS,
  OUTAGE_PROBE_FIRST_MS,
  spokenDuration,
} from '../../node/daemon/timing.js';
import { contextFor } from '../context.js';

interface DaemonOptions {
  healthAddr?: string;
  supervised?: boolean;
  autoupdate: boolean;
  autoupdateInterval?: string;
  autoupdateCheckMs?: number;
  tickMs?: number;
  backoffMs?: number;
  drainMs?: number;
}

function positiveMs(name: string): (value: string) => number {
  return (value) => {
    const ms = Number(value);
    if (!Number.isInteger(ms) || ms < 10 || ms > 3_600_000)
      throw new InvalidArgumentError(`${name} must be a whole number of milliseconds from 10 to 3600000`);
    return ms;
  };
}

export function daemonCommand(): Command {
  return (
    new Command('daemon')
      .description("run this node's agents: their schedules and the runs the service hands it, in the foreground (systemd runs this)")
      .option(
        '--health-addr <addr>',
        'serve GET /healthz and /metrics at PORT (loopback) or HOST:PORT (config health_addr; off by default)',
      )
      .option(
        '--no-autoupdate',
        'never check the service for a newer release (config auto_update false; install --no-autoupdate puts it in the unit)',
      )
      .option(
        '--supervised',
        'a supervisor of yours starts it again when it exits (a container restart policy, supervisord, runit): upgrade then stops it and waits for the new one',
      )
      .option(
        '--autoupdate-interval <duration>',
        'between two checks for a newer release, 5m to 7d (config auto_update_interval; 24h by default)',
      )
      // For tests and benchmarks only: the defaults are what a node runs with.
      .addOption(new Option('--tick-ms <ms>', 'scheduler tick').argParser(positiveMs('--tick-ms')).hideHelp())
      .addOption(new Option('--backoff-ms <ms>', 'first wait of the slow re-checks').argParser(positiveMs('--backoff-ms')).hideHelp())
      .addOption(
        new Option('--drain-ms <ms>', 'how long in-flight runs may finish after SIGTERM').argParser(positiveMs('--drain-ms')).hideHelp(),
      )
      .addOption(
        new Option('--autoupdate-check-ms <ms>', 'between two checks for a newer release, below the 5m floor')
          .argParser(positiveMs('--autoupdate-check-ms'))
          .hideHelp(),
      )
      .addHelpText(
        'after',
        `
Runs on this host what the service hands this node: the runs of its schedules (register --every, swarm-node
schedule add --here) and the runs started with the JWT anywhere (curl, the wizard, another machine), up to
\`concurrency\` at once (swarm-node config). It long-polls the service with the node credential from enrollment,
never the user's JWT; the poll is its heartbeat (offline after 45 s without one). At its start it moves the
intervals an earlier release kept here to the service, pinned to this node (event=schedule_moved). The node's
labels (swarm-node labels) are sent at start and whenever the service is back after an outage. Each run is kept
before its agent starts, and its result before it is reported: never charged twice, never run twice.

A refused credential is asked about again slowly (${spokenDuration(DEFAULT_BACKOFF_MS)}, doubling to ${spokenDuration(MAX_BACKOFF_MS)}). A service that
cannot be reached is asked again every ${spokenDuration(OUTAGE_PROBE_FIRST_MS)} to ${spokenDuration(OUTAGE_PROBE_CAP_MS)}: results finished meanwhile are kept and reported, and work is
taken again, as soon as it answers. A full var/ (its journal unwritable) takes no run until it can write. A node that is
not enrolled, or whose credential is refused, holds every agent until it is enrolled again. A node removed from your
nodes (swarm-node nodes remove, or by the service after 14 days offline) stops: event=node_removed, exit 8. An
ephemeral node (install --ephemeral) removes itself once its one run is reported: event=node_retired, exit 8 (and
with --uninstall-after, outside systemd, its install is removed: event=install_removed). SIGTERM or SIGINT: no
new work, in-flight runs get ${spokenDuration(DEFAULT_DRAIN_MS)} to finish, then their agents are stopped (the runs are refunded), exit 0.

Logs: one line per event on stdout, logfmt, no colours, never a token:
  ts=… level=info event=run_succeeded agent=agent_ops_monitor_004 run_id=… seconds=1.2 charged_cents=4 source=service
swarm-node status shows whether it runs, its last tick and what it holds and why; swarm-node list each
agent's next run.

Auto-update (on unless --no-autoupdate or config auto_update false): every --autoupdate-interval (24h, ±10 %
so that a fleet does not ask at once) it asks the service for the newest release. A newer one is downloaded and
verified as swarm-node upgrade does (signature, SHA-256, every file) and staged in var/updates/; then no new
work is taken, and once the runs in flight have ended it exits 9. The unit starts it again, and its ExecStartPre
(swarm-node upgrade --pending, as root) switches to the staged release first. The new daemon's first tick keeps
the switch (event=updated); one that stops before it is rolled back at the next start. A release that fails
verification switches nothing: event=update_failed with the reason, this version runs on.

Health: with --health-addr (or swarm-node config set health_addr 9465; SWARM_NODE_HEALTH_ADDR in the unit's
etc/environment) it serves GET /healthz, 200 while the loop ticks and the service answers its polls, 503 with
the reasons otherwise, and GET /metrics for Prometheus: runs by outcome, cents charged, poll latency. A port alone
listens on 127.0.0.1 only; give a host (0.0.0.0:9465) to be reached from elsewhere.

Example:
  $ systemctl start svc-swarm-node        # as installed
  $ swarm-node daemon                     # by hand, in the foreground (upgrade restarts it as it was started)
  $ swarm-node daemon --supervised        # under a supervisor of yours, which starts it again
  $ swarm-node daemon --health-addr 9465  # curl -s 127.0.0.1:9465/healthz
  $ swarm-node daemon --no-autoupdate     # never update by itself (or: swarm-node config set auto_update false)`,
      )
      .action(async (options: DaemonOptions, command: Command) => {
        const ctx = contextFor(command, 'daemon');
        // The daemon owns SIGINT as well as SIGTERM: both mean "finish in-flight runs, exit 0", not the CLI's
        // exit 130 of an interrupted command.
        const stop = ctx.stopSignal();
        const [{ runDaemon }, { parseHealthAddr, validateConfigValue }, { readNodeLabels }, { autoUpdateSettings }] = await Promise.all([
          import('../../node/daemon/daemon.js'),
          import('../../node/host/config.js'),
          import('../../node/agents/labels.js'),
          import('../../node/daemon/auto-update-settings.js'),
        ]);
        const healthAddr =
          options.healthAddr === undefined ? ctx.config().health_addr : validateConfigValue('health_addr', options.healthAddr);
        const healthAt = healthAddr === '' ? undefined : parseHealthAddr(healthAddr);
        // systemd sets INVOCATION_ID for the processes of a unit it runs (systemd.exec(5)).
        const supervisor = ctx.env.INVOCATION_ID !== undefined ? 'systemd' : options.supervised === true ? 'declared' : 'none';
        const autoUpdate = autoUpdateSettings(options, ctx.config(), ctx.paths, ctx.env, ctx.version, {
          supervised: supervisor !== 'none',
        });
        const outcome = await runDaemon(
          {
            db: await ctx.store(),
            client: await ctx.client(),
            clock: ctx.clock,
            write: (line) => process.stdout.write(line),
            credentialsFile: ctx.paths.credentialsFile,
            varDir: ctx.paths.varDir,
            pid: process.pid,
            version: ctx.version,
            name: ctx.paths.name,
            home: ctx.paths.home,
            callerFor: await ctx.nodeCallerFactory(),
            concurrency: ctx.config().concurrency,
            labels: () => readNodeLabels(ctx.paths.configFile),
            autoUpdate,
            supervisor,
            ...(healthAt === undefined ? {} : { healthAt }),
            ...(options.tickMs === undefined ? {} : { tickMs: options.tickMs }),
            ...(options.backoffMs === undefined ? {} : { backoffMs: options.backoffMs }),
            ...(options.drainMs === undefined ? {} : { drainMs: options.drainMs }),
          },
          stop,
        );
        // Runs still waiting for their answer would hold the process open past systemd's stop timeout. Their rows
        // are committed as pending, and the next start settles them with their own keys.
        if (!outcome.drained) ctx.exitWhenDone();
        // An ephemeral node installed with --uninstall-after removes its install now, unless a unit runs it: then the
        // unit's ExecStopPost does, as root (src/node/install/uninstall-retired.ts).
        if (outcome.retired !== undefined) {
          const [{ layoutOfHome }, { uninstallRetiredNode, uninstallsAfterRetiring }, { DaemonLog }] = await Promise.all([
            import('../../node/host/location.js'),
            import('../../node/install/uninstall-retired.js'),
            import('../../node/daemon/log.js'),
          ]);
          const layout = uninstallsAfterRetiring(ctx.paths) ? layoutOfHome(ctx.paths.home) : undefined;
          if (layout !== undefined && !(layout.onHost && process.env.INVOCATION_ID !== undefined)) {
            const removed = await uninstallRetiredNode(layout, () => undefined, false);
            new DaemonLog((line) => process.stdout.write(line), ctx.clock).info('install_removed', {
              root: layout.root,
              removed: removed?.changes.length ?? 0,
            });
          }
        }
        // Exit 8, which the unit does not restart (RestartPreventExitStatus): the node will never be accepted again.
        if (outcome.removed !== undefined) throw outcome.removed;
        // Exit 9: restarted by the unit (Restart=on-failure), whose ExecStartPre switches to the staged release.
        if (outcome.updateStaged !== undefined) {
          throw new SvcError(
            'update_staged',
            `swarm-node ${outcome.updateStaged} is verified and staged; the daemon stopped so that its next start runs it`,
          );
        }
      })
  );
}
