// swarm-node doctor: checks the installed node and says how to fix what fails (docs/operations.md "Doctor"). Exit 1
// when a check fails; under --json the report is the output, or the error's `checks` when something failed.
import { Command } from 'commander';
import type { ChalkInstance } from 'chalk';
import type { DoctorReport } from '../../node/install/doctor.js';
import { contextFor } from '../context.js';

export function doctorCommand(): Command {
  return new Command('doctor')
    .description(
      'check the node: layout, modes and owners, unit, Node, service and clock, token, database, that its daemon runs and the service sees it online',
    )
    .option('--root <dir>', 'the staging directory the node was installed under (default: SWARM_NODE_HOME, else this install)')
    .addHelpText(
      'after',
      '\nExample:\n  $ sudo swarm-node doctor\n  $ swarm-node doctor --json | jq \'.checks[] | select(.status != "ok")\'',
    )
    .action(async (flags: { root?: string }, command: Command) => {
      // SWARM_NODE_HOME names the node as for every other command (an install under it, or a home of its own);
      // --root names an install, and wins.
      const fromHome = flags.root === undefined && (process.env.SWARM_NODE_HOME ?? '').trim() !== '';
      const ctx = contextFor(command, fromHome ? 'command' : 'install');
      const [{ runDoctor }, { SvcError }, { installOfHome }] = await Promise.all([
        import('../../node/install/doctor.js'),
        import('../../contract/errors.js'),
        import('../../node/host/location.js'),
      ]);
      const layout = fromHome ? installOfHome(ctx.paths.home) : ctx.layout();
      const found = await runDoctor({
        target: layout === undefined ? { home: ctx.paths } : { layout },
        clock: ctx.clock,
        client: await ctx.client(),
      });
      // Each fix as a person types it here: with the --root, --node and service in force (invocation.ts).
      const report = {
        ...found,
        checks: found.checks.map((check) => (check.fix === undefined ? check : { ...check, fix: ctx.output.commands(check.fix) })),
      };
      const failed = report.checks.filter((check) => check.status === 'fail');
      // One JSON document either way: the report, or the error carrying the same checks.
      if (failed.length === 0 || !ctx.json) ctx.output.result(report, humanReport);
      if (failed.length > 0) {
        throw new SvcError(
          'failed',
          `${failed.length} of ${report.checks.length} checks failed: ${failed.map((check) => check.name).join(', ')}`,
          {
            remedy: failed.map((check) => `${check.name}: ${check.fix ?? 'see above'}`).join('\n'),
            extensions: { checks: report.checks, root: report.root, home: report.home },
          },
        );
      }
    });
}

function humanReport(report: DoctorReport, style: ChalkInstance): string {
  const mark = { ok: style.green('ok  '), warn: style.yellow('warn'), fail: style.red('FAIL') };
  return report.checks
    .map((check) => {
      const line = `${mark[check.status]} ${check.name.padEnd(10)} ${check.detail}`;
      return check.status === 'ok' || check.fix === undefined ? line : `${line}\n     ${style.dim('fix:')} ${check.fix}`;
    })
    .join('\n');
}
