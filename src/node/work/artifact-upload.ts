// The node's upload of a run's artifacts (docs/api.md "Run artifacts"): after the agent ended, before the result is
// reported, within the lease (its renewals go on), each regular file the run left in its artifacts directory, by name,
// one at a time, streamed from the file to the service. The caps of the contract are applied here first, so the
// service is never sent what it would refuse for its size; what the service refuses anyway (the user's quota) or what
// cannot be sent is not kept, and the run's outcome stands. Every file not uploaded is named, with why. A file whose
// name holds one of the run's secrets (docs/api.md "Secrets") is not sent, and its name is told redacted.
import { messageOf, SvcError } from '../../contract/errors.js';
import { MAX_ARTIFACT_BYTES, MAX_ARTIFACT_BYTES_PER_RUN, MAX_ARTIFACTS_PER_RUN } from '../../contract/jobs.js';
import type { ArtifactSource, SkippedEntry } from '../runner/artifact-source.js';
import type { NodeApi } from '../service/node-api.js';

export interface UploadedArtifact {
  name: string;
  size_bytes: number;
  sha256: string;
}

export interface ArtifactReport {
  uploaded: UploadedArtifact[];
  /** Entries that were not the run's artifacts to send: not regular files, bad names, past the caps. */
  skipped: SkippedEntry[];
  /** Files that were sent and refused, or could not be sent: the service keeps none of them. */
  not_kept: Array<{ name: string; reason: string }>;
}

/** Refusals that end the upload of every file after it: the run is not this node's (any more), or the service is away. */
const STOP_ON = new Set([
  'lease_lost',
  'run_not_found',
  'node_removed',
  'unauthorized',
  'service_unreachable',
  'service_unavailable',
  'interrupted',
]);

export async function uploadArtifacts(
  api: NodeApi,
  run: { run_id: string; lease_id: string },
  source: ArtifactSource,
  signal?: AbortSignal,
  redact: (text: string) => string = (text) => text,
): Promise<ArtifactReport> {
  const report: ArtifactReport = { uploaded: [], skipped: [], not_kept: [] };
  let listing;
  try {
    listing = await source.list();
  } catch (error) {
    report.skipped.push({ name: '…', reason: `the artifacts directory could not be read: ${messageOf(error)}` });
    return report;
  }
  report.skipped.push(...listing.skipped.map((entry) => ({ ...entry, name: redact(entry.name) })));
  let files = 0;
  let bytes = 0;
  let stopped: string | undefined;
  for (const file of listing.files) {
    if (redact(file.name) !== file.name) {
      report.skipped.push({ name: redact(file.name), reason: "its name holds one of the run's secrets" });
      continue;
    }
    if (stopped !== undefined) {
      report.not_kept.push({ name: file.name, reason: stopped });
      continue;
    }
    if (files + 1 > MAX_ARTIFACTS_PER_RUN) {
      report.skipped.push({ name: file.name, reason: `the run has ${MAX_ARTIFACTS_PER_RUN} artifacts already, the most a run keeps` });
      continue;
    }
    if (bytes + file.size > MAX_ARTIFACT_BYTES_PER_RUN) {
      report.skipped.push({
        name: file.name,
        reason: `its ${file.size} bytes would bring the run's artifacts over ${MAX_ARTIFACT_BYTES_PER_RUN} bytes`,
      });
      continue;
    }
    try {
      // At most what the run may still keep: a file that grew since it was listed is refused at its open.
      const room = Math.min(MAX_ARTIFACT_BYTES, MAX_ARTIFACT_BYTES_PER_RUN - bytes);
      const stored = await api.putArtifact(run, file.name, file.size, () => source.open(file.name, room), signal);
      report.uploaded.push({ name: stored.name, size_bytes: stored.size_bytes, sha256: stored.sha256 });
      files += 1;
      bytes += stored.size_bytes;
    } catch (error) {
      const code = error instanceof SvcError ? error.code : undefined;
      const reason = code === undefined ? messageOf(error) : `${code}: ${error instanceof SvcError ? error.message : ''}`;
      report.not_kept.push({ name: file.name, reason });
      if (code !== undefined && STOP_ON.has(code)) stopped = `not sent: an earlier upload was refused (${code})`;
      if (signal?.aborted === true) stopped = 'not sent: the run was stopped';
    }
  }
  return report;
}
