// A run's artifacts, as its user fetches them (docs/api.md "Run artifacts"; `swarm-node artifacts`): the listing,
// and each file downloaded into a directory: streamed into a temporary file beside its place, checked against the
// listing's size and SHA-256, then moved into place under its name, checked here again (the names come from the
// service). An existing file is never replaced unless asked; a download that fails leaves nothing behind.
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { artifactTransferDeadlineMs, isArtifactName } from '../../contract/artifacts.js';
import { SvcError } from '../../contract/errors.js';
import type { ArtifactView, RunArtifacts } from '../../contract/jobs.js';
import type { SavedStream } from '../../lib/bounded-stream.js';
import type { ServiceClient } from './service-client.js';

export interface DownloadedArtifact {
  name: string;
  path: string;
  size_bytes: number;
  sha256: string;
}

export async function listRunArtifacts(client: ServiceClient, jwt: string, runId: string): Promise<RunArtifacts> {
  return (
    await client.call<RunArtifacts>({
      method: 'GET',
      path: `/v1/swarm/runs/${encodeURIComponent(runId)}/artifacts`,
      bearer: jwt,
      retrySafe: true,
    })
  ).body;
}

/** Downloads every artifact of `listing` into `dir` (made 0700 when missing); `force` replaces files there. */
export async function downloadRunArtifacts(
  client: ServiceClient,
  jwt: string,
  listing: RunArtifacts,
  dir: string,
  options: { force: boolean },
): Promise<DownloadedArtifact[]> {
  const into = resolve(dir);
  for (const artifact of listing.artifacts) {
    if (!isArtifactName(artifact.name)) {
      throw new SvcError(
        'failed',
        `the service named an artifact ${JSON.stringify(artifact.name.slice(0, 200))}, which is not a plain file name; nothing was written`,
      );
    }
  }
  if (existsSync(into) && !statSync(into).isDirectory())
    throw new SvcError('usage', `${into} is not a directory`, { remedy: 'Give --download a directory (it is made when missing).' });
  const present = listing.artifacts.filter((artifact) => existsSync(join(into, artifact.name))).map((artifact) => artifact.name);
  if (present.length > 0 && !options.force) {
    throw new SvcError('local_state', `${into} has ${present.join(', ')} already; nothing was downloaded`, {
      remedy: `Download into another directory, or add --force to replace them: swarm-node artifacts ${listing.run_id} --download ${dir} --force`,
      extensions: { present },
    });
  }
  mkdirSync(into, { recursive: true, mode: 0o700 });
  const downloaded: DownloadedArtifact[] = [];
  for (const artifact of listing.artifacts) downloaded.push(await downloadOne(client, jwt, listing.run_id, artifact, into, options.force));
  return downloaded;
}

async function downloadOne(
  client: ServiceClient,
  jwt: string,
  runId: string,
  artifact: ArtifactView,
  into: string,
  force: boolean,
): Promise<DownloadedArtifact> {
  const path = join(into, artifact.name);
  // Hidden, beside its place (one filesystem, so the move is atomic), and unique: a second download at once is apart.
  const temp = join(into, `.${artifact.name}.${randomBytes(6).toString('hex')}.part`);
  try {
    const saved = (
      await client.call<SavedStream>({
        method: 'GET',
        path: `/v1/swarm/runs/${encodeURIComponent(runId)}/artifacts/${encodeURIComponent(artifact.name)}`,
        bearer: jwt,
        headers: { accept: '*/*' },
        saveTo: { file: temp, maxBytes: artifact.size_bytes },
        retrySafe: true,
        deadlineMs: artifactTransferDeadlineMs(artifact.size_bytes),
      })
    ).body;
    if (saved.bytes !== artifact.size_bytes || saved.sha256 !== artifact.sha256) {
      throw new SvcError(
        'failed',
        `${artifact.name} came as ${saved.bytes} bytes with sha256 ${saved.sha256}, not the ${artifact.size_bytes} bytes with sha256 ${artifact.sha256} listed; it was not kept`,
        {
          remedy: `Download it again: swarm-node artifacts ${runId} --download ${into}`,
        },
      );
    }
    if (force) renameSync(temp, path);
    else {
      // link fails when the name appeared meanwhile: a file is never replaced without --force.
      try {
        linkSync(temp, path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        throw new SvcError('local_state', `${path} appeared while ${artifact.name} was downloaded; it was left as it is`, {
          remedy: 'Add --force to replace it.',
        });
      }
    }
    return { name: artifact.name, path, size_bytes: saved.bytes, sha256: saved.sha256 };
  } finally {
    rmSync(temp, { force: true });
  }
}
