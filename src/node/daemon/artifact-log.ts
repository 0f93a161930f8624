// What became of a run's artifacts, in the daemon's log (docs/api.md "Run artifacts"): how many went up, and each
// file the node skipped or the service did not keep, with why; the run itself succeeded or failed on its own.
import type { NodeCaller } from '../work/caller.js';
import type { ArtifactReport } from '../work/artifact-upload.js';
import type { DaemonLog } from './log.js';

/** `caller`, its executor telling `log` about every run's artifacts. */
export function loggingArtifacts(caller: NodeCaller, log: DaemonLog): NodeCaller {
  caller.executor.onArtifacts((run, report) => logArtifacts(log, { agent: run.agent_id, run_id: run.run_id }, report));
  return caller;
}

function logArtifacts(log: DaemonLog, fields: { agent: string; run_id: string }, report: ArtifactReport): void {
  if (report.uploaded.length > 0) {
    log.info('artifacts_uploaded', {
      ...fields,
      count: report.uploaded.length,
      bytes: report.uploaded.reduce((sum, file) => sum + file.size_bytes, 0),
    });
  }
  for (const entry of report.skipped) log.warn('artifact_skipped', { ...fields, name: entry.name, reason: entry.reason });
  for (const entry of report.not_kept) log.warn('artifact_not_kept', { ...fields, name: entry.name, reason: entry.reason });
}
