// swarm-node agent init | upload | versions | rollback | remove: your own versions of the catalog's agents
// (docs/api.md "Agent upload", docs/sections/agent-upload.md). Uploading needs the JWT (spec §5.4), from a file,
// stdin, SVC_TOKEN or the stored sign-in, never from the command line.
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import type { AgentVersion } from '../../contract/agent-upload.js';
import { SvcError } from '../../contract/errors.js';
import { withRecentSignIn } from '../step-up.js';
import { contextFor, type CommandContext } from '../context.js';
import { collectInputPair } from '../input-options.js';
import { shortTime, table } from '../table.js';

interface TokenOptions {
  tokenFile?: string;
  tokenStdin?: boolean;
}

const TOKEN_HELP = `
The JWT is read from --token-file <file>, --token-stdin, the environment (SVC_TOKEN, or SVC_JWT), or else the
signed-in credentials (swarm-node login); never from an argument, which every user of the host can read in ps.`;

function withToken(command: Command): Command {
  return command.option('--token-file <file>', 'read the JWT from this file').option('--token-stdin', 'read the JWT from standard input');
}

async function jwtFor(ctx: CommandContext, options: TokenOptions): Promise<string> {
  return (await givenJwt(ctx, options)) ?? ctx.requireJwt().token;
}

/** A JWT handed to the command (a file, stdin, the environment); undefined: the stored one. */
async function givenJwt(ctx: CommandContext, options: TokenOptions): Promise<string | undefined> {
  const { normalizeTokenText } = await import('../../node/identity/token.js');
  if (options.tokenFile !== undefined && options.tokenStdin === true)
    throw new SvcError('usage', 'give one of --token-file and --token-stdin');
  if (options.tokenFile !== undefined) {
    try {
      return normalizeTokenText(readFileSync(options.tokenFile, 'utf8'), options.tokenFile);
    } catch (error) {
      if (error instanceof SvcError) throw error;
      throw new SvcError('usage', `cannot read the token file ${options.tokenFile}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  }
  if (options.tokenStdin === true) {
    if (process.stdin.isTTY)
      throw new SvcError('usage', '--token-stdin reads a piped token and never prompts', {
        remedy: 'Pipe it: ... --token-stdin < token-file',
      });
    return normalizeTokenText(readFileSync(0, 'utf8'), 'standard input');
  }
  for (const name of ['SVC_TOKEN', 'SVC_JWT']) {
    const value = ctx.env[name];
    if (value !== undefined && value.trim() !== '') return normalizeTokenText(value, name);
  }
  return undefined;
}

const short = (digest: string): string => digest.slice(0, 12);

function versionsTable(versions: readonly AgentVersion[]): string {
  return table(
    ['VERSION', 'DIGEST', 'UPLOADED', 'SIZE', 'FILES', 'CURRENT'],
    versions.map((v) => [
      v.version,
      short(v.digest),
      shortTime(v.uploaded_at),
      `${v.size_bytes} B`,
      String(v.files),
      v.current ? 'yes' : '',
    ]),
    ['left', 'left', 'left', 'right', 'right', 'left'],
  );
}

export function agentCommand(): Command {
  const agent = new Command('agent')
    .description('agents of your own, and your versions of the catalog agents: init, run-local, upload, versions, rollback, remove')
    .addHelpText(
      'after',
      `
Example:
  $ swarm-node agent init ./my-agent --id my_agent
  $ swarm-node agent run-local ./my-agent --input name=Ada
  $ swarm-node agent upload ./my-agent
  $ swarm-node agent init ./my-monitor --agent agent_ops_monitor_004
  $ swarm-node agent upload ./my-monitor
  $ swarm-node agent versions agent_ops_monitor_004
  $ swarm-node agent rollback agent_ops_monitor_004
  $ swarm-node agent remove agent_ops_monitor_004 0.1.0`,
    );

  agent.addCommand(
    new Command('init')
      .description('start a bundle in DIR that works as it is: an agent of your own (--id), or your version of a catalog agent')
      .argument('<dir>', 'a new or empty directory')
      .option('--id <name>', 'the agent: a name of your own (2-48 lower-case letters, digits and _), or a catalog agent_id')
      .option('--agent <agent_id>', 'the same as --id (a catalog agent_id, or your own name)')
      .addOption(
        new Option('--lang <language>', 'the entry script: JavaScript (main.mjs), TypeScript (main.ts) or Python (main.py)')
          .choices(['js', 'ts', 'py'])
          .default('js'),
      )
      .addHelpText(
        'after',
        `
An agent of your own runs on your nodes only, at the per-run price the service sets for such agents (swarm-node
agents shows it once you have uploaded one); a catalog agent_id makes your version of that agent, at its price.

Example:
  $ swarm-node agent init ./my-agent --id my_agent
  $ swarm-node agent run-local ./my-agent --input name=Ada
  $ swarm-node agent init ./my-monitor --id agent_ops_monitor_004 --lang ts
  $ swarm-node agent init ./my-py-agent --id my_py_agent --lang py`,
      )
      .action(async (dir: string, options: { id?: string; agent?: string; lang: 'js' | 'ts' | 'py' }, command: Command) => {
        const ctx = contextFor(command);
        if (options.id !== undefined && options.agent !== undefined && options.id !== options.agent)
          throw new SvcError('usage', 'give --id or --agent, not both');
        const agentId = options.id ?? options.agent;
        if (agentId === undefined)
          throw new SvcError('usage', 'name the agent: --id <name>', {
            remedy: 'For example: swarm-node agent init ./my-agent --id my_agent',
          });
        const { scaffoldAgent } = await import('../../node/agents/scaffold.js');
        ctx.output.result(scaffoldAgent(dir, agentId, options.lang), (r) =>
          [
            `Created ${r.dir} (${r.own ? 'your own agent' : 'your version of'} ${r.agent_id}, version ${r.version}): ${r.files.join(', ')}.`,
            `Try it:  swarm-node agent run-local ${dir} --input name=Ada`,
            `Then:    swarm-node agent upload ${dir}`,
          ].join('\n'),
        );
      }),
  );

  agent.addCommand(
    new Command('run-local')
      .description('run the bundle in DIR on this host as a node would, unbilled: checked like an upload, its input checked like a run')
      .argument('<dir>', 'a bundle directory (agent.json at its top)')
      .option('--input <key=value>', "a field of the agent's input (repeat it); values are strings", collectInputPair)
      .option('--input-file <file>', 'the agent\'s whole input, a JSON object ("-" for stdin)')
      .option('--home <dir>', "where the agent's state is kept between runs here (default ~/.cache/swarm-node/run-local)")
      .addHelpText(
        'after',
        `
The bundle is packed and checked by the upload's rules, the input by its input_schema, then installed and run by the
node's own runner (the same stdin document, environment, run and state directories, time and memory limits), as
your own user, with nothing charged and no service involved. Exits 0 with the agent's answer; 1 when the agent
fails (its message and the end of its stderr shown); 2 for a bundle or input the service would refuse.

Example:
  $ swarm-node agent run-local ./my-agent --input name=Ada
  $ swarm-node --json agent run-local ./my-agent --input-file input.json | jq .output`,
      )
      .action(async (dir: string, options: { input?: string[]; inputFile?: string; home?: string }, command: Command) => {
        const ctx = contextFor(command);
        const input = (await import('../run-input.js')).runInput(options) ?? {};
        const { runBundleLocally } = await import('../../node/agents/run-bundle-locally.js');
        const run = await runBundleLocally(dir, { input, ...(options.home === undefined ? {} : { home: options.home }) });
        if (run.outcome.status === 'failed') {
          throw new SvcError(
            'failed',
            `${run.agent_id} ${run.version} failed (${run.outcome.output.error}): ${run.outcome.output.message}`,
            {
              remedy: 'A failed run on a node is refunded; fix the agent and run it here again.',
            },
          );
        }
        const result = {
          agent_id: run.agent_id,
          version: run.version,
          digest: run.digest,
          run_id: run.run_id,
          state_dir: run.state_dir,
          status: run.outcome.status,
          output: run.outcome.output,
          events: run.events.map((event) => ({ ...event, at: new Date(event.at).toISOString() })),
        };
        ctx.output.result(result, (r) => {
          const summary =
            typeof (r.output as { summary?: unknown } | null)?.summary === 'string'
              ? (r.output as { summary: string }).summary
              : JSON.stringify(r.output, null, 2);
          const partial = (r.output as { partial?: unknown } | null)?.partial === true ? ' a partial result' : '';
          const events = r.events.map((event) => `  ${event.name ?? event.type} ${JSON.stringify(event.data)}`);
          return [
            `Ran ${r.agent_id} ${r.version} here (not charged)${partial === '' ? '' : `, which reported${partial}`}:\n${summary}`,
            ...(events.length === 0 ? [] : [`Events (${events.length}):`, ...events]),
          ].join('\n');
        });
      }),
  );

  agent.addCommand(
    withToken(new Command('upload'))
      .description('pack DIR and upload it as a new version of its agent, which becomes current')
      .argument('<dir>', 'a bundle directory (agent.json at its top)')
      .addHelpText(
        'after',
        `
Your runs of the agent then execute this version on your nodes, billed at the agent's catalog price. A version is
never replaced: raise "version" in agent.json for new contents. Uploading the same contents again changes nothing.
Limits: 5 MiB packed, 20 MiB unpacked, 1000 files; regular files and directories only.${TOKEN_HELP}

Example:
  $ swarm-node agent upload ./my-monitor
  $ SVC_TOKEN="$(cat ~/.config/svc/jwt)" swarm-node agent upload ./my-monitor --json`,
      )
      .action(async (dir: string, options: TokenOptions, command: Command) => {
        const ctx = contextFor(command);
        const given = await givenJwt(ctx, options);
        const { uploadAgent } = await import('../../node/agents/upload.js');
        const client = await ctx.client();
        ctx.output.result(await withRecentSignIn(ctx, (token) => uploadAgent(client, token, dir), given), (r) =>
          r.created
            ? `Uploaded ${r.agent_id} version ${r.version} (${short(r.digest)}, ${r.files} files, ${r.size_bytes} bytes); it is current: your runs of ${r.agent_id} execute it.`
            : `${r.agent_id} version ${r.version} (${short(r.digest)}) was uploaded already with these contents; nothing changed${r.current ? '' : ` (it is not current: swarm-node agent rollback ${r.agent_id} --to ${r.version})`}.`,
        );
      }),
  );

  agent.addCommand(
    withToken(new Command('versions'))
      .description('list your uploaded versions of an agent, newest first, and which one is current')
      .argument('<agent_id>', 'a catalog agent (swarm-node agents)')
      .addHelpText(
        'after',
        `${TOKEN_HELP}\n\nExample:\n  $ swarm-node agent versions agent_ops_monitor_004\n  $ swarm-node agent versions agent_ops_monitor_004 --json | jq -r .current.digest`,
      )
      .action(async (agentId: string, options: TokenOptions, command: Command) => {
        const ctx = contextFor(command);
        const token = await jwtFor(ctx, options);
        const { agentVersions } = await import('../../node/agents/upload.js');
        ctx.output.result(await agentVersions(await ctx.client(), token, agentId), (r) =>
          r.versions.length === 0
            ? `No uploaded version of ${r.agent_id}: your runs use the built-in agent (swarm-node agent init to start one).`
            : versionsTable(r.versions),
        );
      }),
  );

  agent.addCommand(
    withToken(new Command('rollback'))
      .description('make an older uploaded version current again (by default the one before the current), or --builtin')
      .argument('<agent_id>', 'a catalog agent (swarm-node agents)')
      .option('--to <version|digest>', 'the version to make current: its version, its digest, or 7+ first digits of it')
      .option('--builtin', 'make none of your uploads current: runs use the built-in agent again (your versions stay)')
      .addHelpText(
        'after',
        `
Runs accepted from then on execute that version; runs already accepted keep the version they were accepted with.${TOKEN_HELP}

Example:
  $ swarm-node agent rollback agent_ops_monitor_004
  $ swarm-node agent rollback agent_ops_monitor_004 --to 0.1.0
  $ swarm-node agent rollback agent_ops_monitor_004 --builtin`,
      )
      .action(async (agentId: string, options: TokenOptions & { to?: string; builtin?: boolean }, command: Command) => {
        if (options.builtin === true && options.to !== undefined) throw new SvcError('usage', 'give --to or --builtin, not both');
        const ctx = contextFor(command);
        const given = await givenJwt(ctx, options);
        const { rollbackAgent, useBuiltInAgent } = await import('../../node/agents/upload.js');
        const client = await ctx.client();
        const result = await withRecentSignIn(
          ctx,
          (token) =>
            options.builtin === true ? useBuiltInAgent(client, token, agentId) : rollbackAgent(client, token, agentId, options.to),
          given,
        );
        ctx.output.result(result, (r) =>
          r.current === null
            ? `No upload of ${r.agent_id} is current: runs accepted from now on use the built-in agent (your ${r.versions.length} version(s) stay; to return to the one before: swarm-node agent rollback ${r.agent_id}).`
            : `${r.agent_id} version ${r.current.version} (${short(r.current.digest)}) is current${r.previous === null ? '' : `, instead of ${r.previous.version}`}.`,
        );
      }),
  );
  agent.addCommand(
    withToken(new Command('remove'))
      .description('remove one of your uploaded versions for good, freeing its room in your upload quota')
      .argument('<agent_id>', 'a catalog agent (swarm-node agents)')
      .argument('<version>', 'the version to remove: its version, its digest, or 7+ first digits of it')
      .option('-y, --yes', 'remove without asking (needed when stdin is not a terminal)')
      .addHelpText(
        'after',
        `
The current version cannot be removed (roll back first), nor one a run not finished yet is pinned to. The service
also removes versions unused for 90 days by itself (its default), never the current one or the one before it.
Your quota: 256 MiB of bundles and 500 versions by default (the service's operator may set others).${TOKEN_HELP}

Example:
  $ swarm-node agent remove agent_ops_monitor_004 0.1.0
  $ swarm-node --json agent remove agent_ops_monitor_004 3f0c7a5 --yes`,
      )
      .action(async (agentId: string, which: string, options: TokenOptions & { yes?: boolean }, command: Command) => {
        const ctx = contextFor(command);
        if (options.yes !== true && !ctx.canPrompt()) {
          throw new SvcError('usage', `removing ${agentId} version ${which} cannot be undone, and there is no terminal to confirm it on`, {
            remedy: `Add --yes to confirm: swarm-node agent remove ${agentId} ${which} --yes`,
          });
        }
        const token = await jwtFor(ctx, options);
        const { removeAgentVersion, versionToRemove } = await import('../../node/agents/upload.js');
        const client = await ctx.client();
        const version = await versionToRemove(client, token, agentId, which);
        if (options.yes !== true) {
          const { confirmVersionRemoval } = await import('../prompts.js');
          if (
            !(await confirmVersionRemoval(`${agentId} version ${version.version} (${short(version.digest)}, ${version.size_bytes} bytes)`))
          ) {
            throw new SvcError('failed', 'not confirmed: nothing was removed');
          }
        }
        const given = await givenJwt(ctx, options);
        ctx.output.result(
          await withRecentSignIn(ctx, (fresh) => removeAgentVersion(client, fresh, version), given),
          (r) =>
            `Removed ${r.agent_id} version ${r.removed.version} (${short(r.removed.digest)}, ${r.removed.size_bytes} bytes); ${r.versions.length} version(s) left.`,
        );
      }),
  );
  return agent;
}
