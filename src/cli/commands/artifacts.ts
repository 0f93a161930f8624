// swarm-node artifacts RUN_ID [--download DIR]: the files a run left (docs/api.md "Run artifacts"), listed with their
// sizes and SHA-256, and downloaded, each checked against its SHA-256 before it takes its name.
import { Command } from 'commander';
import { SvcError } from '../../contract/errors.js';
import type { RunArtifacts } from '../../contract/jobs.js';
import { UUID_PATTERN } from '../../contract/uuid.js';
import type { DownloadedArtifact } from '../../node/service/run-artifacts.js';
import { contextFor } from '../context.js';
import { table } from '../table.js';

interface ArtifactsFlags {
  download?: string;
  force?: boolean;
}

type ArtifactsResult = RunArtifacts & { downloaded?: DownloadedArtifact[] };

export function artifactsCommand(): Command {
  return new Command('artifacts')
    .description('list the files a run left in its artifacts directory, and download them')
    .argument('<run_id>', 'the run (its run_id: swarm-node run --json, or the daemon log)')
    .option('--download <dir>', 'download every artifact into DIR (made, 0700, when missing), each checked against its sha256')
    .option('--force', 'with --download: replace files of the same names in DIR')
    .addHelpText(
      'after',
      `
An agent writes files into the directory SWARM_ARTIFACTS_DIR names; the node uploads them when the run ends (it
succeeded or failed; not when it was cancelled), and the service keeps them 30 days after that. Each file is
downloaded into a hidden temporary file beside its place, and takes its name only once its size and sha256 are the
listed ones; a file already there is never replaced without --force.

Exit codes: 0 listed (and downloaded), 1 a download failed its check or a file is in the way, 2 usage (not a run id),
4 not signed in, 5 no such run of yours, 6 the service is unreachable.

Example:
  $ swarm-node artifacts 01a218d2-7341-776f-890b-0229ddbbf210
  $ swarm-node artifacts 01a218d2-7341-776f-890b-0229ddbbf210 --download ./drafts
  $ swarm-node artifacts 01a218d2-7341-776f-890b-0229ddbbf210 --json | jq -r '.artifacts[].name'`,
    )
    .action(async (runId: string, flags: ArtifactsFlags, command: Command) => {
      const ctx = contextFor(command);
      if (!new RegExp(UUID_PATTERN).test(runId)) {
        throw new SvcError('usage', `${JSON.stringify(runId)} is not a run id`, {
          remedy: 'Give the run_id of a run, a UUID (your runs and their ids: swarm-node runs).',
        });
      }
      if (flags.force === true && flags.download === undefined)
        throw new SvcError('usage', '--force goes with --download', { remedy: 'Add --download DIR.' });
      const jwt = ctx.requireJwt();
      const { downloadRunArtifacts, listRunArtifacts } = await import('../../node/service/run-artifacts.js');
      const client = await ctx.client();
      const listing = await listRunArtifacts(client, jwt.token, runId);
      const result: ArtifactsResult = { ...listing };
      if (flags.download !== undefined && listing.artifacts.length > 0) {
        const into = flags.download;
        result.downloaded = await ctx.output.spin(
          `downloading ${listing.artifacts.length} artifact${listing.artifacts.length === 1 ? '' : 's'} into ${into}`,
          () => downloadRunArtifacts(client, jwt.token, listing, into, { force: flags.force === true }),
        );
      }
      ctx.output.result(result, render);
    });
}

function render(result: ArtifactsResult): string {
  if (result.artifacts.length === 0) {
    return result.expires_at !== null && Date.parse(result.expires_at) <= Date.now()
      ? `The artifacts of run ${result.run_id} expired at ${result.expires_at}.`
      : `Run ${result.run_id} has no artifacts.`;
  }
  const rows = result.artifacts.map((artifact) => [artifact.name, String(artifact.size_bytes), artifact.sha256]);
  const lines = [table(['NAME', 'BYTES', 'SHA256'], rows, ['left', 'right', 'left'])];
  if (result.expires_at !== null) lines.push('', `Kept until ${result.expires_at}.`);
  if (result.downloaded !== undefined) lines.push('', ...result.downloaded.map((file) => `downloaded ${file.path} (sha256 checked)`));
  return lines.join('\n');
}
