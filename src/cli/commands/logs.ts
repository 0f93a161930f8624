// swarm-node logs RUN_ID: what the run's agent wrote on stdout and stderr (docs/api.md "Run logs"), as the service
// keeps it; --follow until the run ends. Lines are the agent's own text, escaped for the terminal; stderr's and the
// node's carry a tag, so they stay apart without colour.
import { Command, Option } from 'commander';
import type { ChalkInstance } from 'chalk';
import { SvcError } from '../../contract/errors.js';
import type { LogEntry, LogStreamEnd } from '../../contract/jobs.js';
import { LOG_CAP_WORDS, RUN_DATA_RETENTION_DAYS } from '../../contract/run-log-limits.js';
import { contextFor, type CommandContext } from '../context.js';
import { renderLogEntry } from '../render/log-entry.js';
import type { RunEventServed } from '../../contract/run-events.js';

const TRUNCATED_NOTE = `Note: this log reached its ${LOG_CAP_WORDS} cap; the rest of what the agent wrote was not kept.`;

interface LogsOptions {
  follow?: boolean;
  events?: boolean;
  after?: number;
  timestamps?: boolean;
}

export function logsCommand(): Command {
  return new Command('logs')
    .description("a run's log: its agent's stdout and stderr, kept by the service; --follow until the run ends")
    .argument('<run_id>', 'the run (execute answers its run_id; swarm-node runs lists those of this node)')
    .option('-f, --follow', 'print new lines as they come, until the run ends')
    .option('--events', "the run's structured events (progress, output, tokens, its own) instead, as they come, until it ends")
    .addOption(new Option('--after <seq>', 'only the lines after this one (their seq, as --json shows it)').argParser(seqOf))
    .option('--timestamps', "print each line's time (UTC, when the node read it)")
    .addHelpText(
      'after',
      `
stdout lines print as they are, but for an answer (a long line that is a JSON
object): its summary and findings, as run shows them; --json and runs show keep
it whole. stderr lines start with [stderr], the node's notes with [node]. A log holds at most ${LOG_CAP_WORDS} per run (then a [node] line says
it was truncated) and is kept ${RUN_DATA_RETENTION_DAYS} days after its run ended.
Under --json: one document ({run_id, entries, truncated, finished, status, …});
with --follow, one JSON object per line: each entry, then {"end": {…}}.

--events prints the run's structured events (docs/api.md "Run events"), one a
line: its type (and name), then its data as JSON; under --json each event's
whole document, then {"end": {…}}. It follows them until the run ends, as
--follow does lines.

Exit codes: 0 the log was printed (with --follow or --events: the run
succeeded), 1 with --follow or --events the run failed or was cancelled, 5 no run of yours has this id, 6 the
service could not be reached, 130 interrupted.

Example:
  $ swarm-node logs 3f2c9a1e-…
  $ swarm-node logs 3f2c9a1e-… --follow
  $ swarm-node logs 3f2c9a1e-… --events
  $ swarm-node --json logs 3f2c9a1e-… | jq -r '.entries[].text'`,
    )
    .action(async (runId: string, options: LogsOptions, command: Command) => {
      const ctx = contextFor(command);
      const client = await ctx.client();
      const token = ctx.requireJwt().token;
      const run = await import('../../node/runs/run-logs.js');
      const line = (entry: LogEntry, style: ChalkInstance): string =>
        renderLogEntry(entry, style, { timestamps: options.timestamps === true, runId });
      if (options.events === true) {
        const end = await run.followRunEvents(client, token, runId, {
          ...(options.after === undefined ? {} : { after: options.after }),
          signal: ctx.interruption(),
          onEvent: (event) => ctx.output.resultLine(event, (data) => renderRunEvent(data, options.timestamps === true)),
        });
        reportEnd(ctx, runId, { ...end, error: null });
        return;
      }
      if (options.follow !== true) {
        const logs = await run.readRunLogs(client, token, runId, options.after);
        ctx.output.result(logs, (data, style) => data.entries.map((entry) => line(entry, style)).join('\n'));
        if (logs.expired)
          ctx.output.info(`The log of run ${runId} expired: logs are kept ${RUN_DATA_RETENTION_DAYS} days after their run ended.`);
        else if (logs.truncated) ctx.output.info(TRUNCATED_NOTE);
        else if (logs.entries.length === 0) ctx.output.info(`No log lines${logs.finished ? '' : ' yet'} (run ${runId} is ${logs.status}).`);
        return;
      }
      const end = await run.followRunLogs(client, token, runId, {
        ...(options.after === undefined ? {} : { after: options.after }),
        signal: ctx.interruption(),
        onEntry: (entry) => ctx.output.resultLine(entry, (data, style) => line(data, style)),
      });
      reportEnd(ctx, runId, end);
    });
}

/**
 * One event as a line: its type (and name) and its data as JSON. Its strings come escaped for the terminal already
 * (output.ts: a control character is a visible \uXXXX), which JSON then writes with its backslash escaped.
 */
function renderRunEvent(event: RunEventServed, timestamps: boolean): string {
  const kind = event.name === null ? event.type : `${event.type}:${event.name}`;
  return `${timestamps ? `${event.at} ` : ''}[${kind}] ${JSON.stringify(event.data)}`;
}

/** How the followed run ended: exit 0 when it succeeded, 1 (failed) otherwise. */
function reportEnd(ctx: CommandContext, runId: string, end: LogStreamEnd): void {
  if (ctx.output.json) ctx.output.resultLine({ end }, () => '');
  if (end.truncated) ctx.output.info(TRUNCATED_NOTE);
  if (end.status === 'succeeded') {
    ctx.output.success(`Run ${runId} succeeded.`);
    return;
  }
  const why = end.error === null || end.error === end.status ? '' : ` (${end.error})`;
  throw new SvcError('failed', `run ${runId} ended ${end.status}${why}`, {
    extensions: { run_id: runId, status: end.status, run_error: end.error },
  });
}

function seqOf(value: string): number {
  if (!/^[0-9]{1,10}$/.test(value)) throw new SvcError('usage', `--after takes a line's seq (a whole number), not "${value}"`);
  return Number(value);
}
