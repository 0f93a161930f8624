// What the service keeps of runs' artifacts (docs/api.md "Run artifacts"): the caps of the contract (src/contract/
// jobs.ts, which the node applies before it sends), the per-user quota (svc-api --artifact-quota-mib), how long they
// are kept, and the rule that cuts a stalled upload. Tests give small figures through startService's options.
import { ARTIFACT_IDLE_SECONDS, ARTIFACT_MIN_BYTES_PER_SECOND } from '../../contract/artifacts.js';
import {
  MAX_ARTIFACT_BYTES,
  MAX_ARTIFACT_BYTES_PER_RUN,
  MAX_ARTIFACT_BYTES_PER_USER,
  MAX_ARTIFACTS_PER_RUN,
  RUN_DATA_RETENTION_DAYS,
} from '../../contract/jobs.js';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { BodyTimeout } from '../http/body-timeout.js';

export interface ArtifactLimits {
  /** One artifact's bytes. */
  maxFileBytes: number;
  /** A run's artifacts together, and how many. */
  maxRunBytes: number;
  maxRunFiles: number;
  /** The bytes a user's artifacts keep stored at once, each digest once; 0: no limit. */
  maxUserBytes: number;
  /** Kept this long after their run ended. */
  retentionMs: number;
  /** An upload is cut off (408) when it stalls or trickles past this rule, not the JSON bodies' one. */
  bodyTimeout: BodyTimeout;
}

export const DEFAULT_ARTIFACT_LIMITS: ArtifactLimits = {
  maxFileBytes: MAX_ARTIFACT_BYTES,
  maxRunBytes: MAX_ARTIFACT_BYTES_PER_RUN,
  maxRunFiles: MAX_ARTIFACTS_PER_RUN,
  maxUserBytes: MAX_ARTIFACT_BYTES_PER_USER,
  retentionMs: RUN_DATA_RETENTION_DAYS * 86_400_000,
  bodyTimeout: { idleMs: ARTIFACT_IDLE_SECONDS * 1000, minBytesPerSecond: ARTIFACT_MIN_BYTES_PER_SECOND },
};

/** What the artifact routes and the retention sweep are given (the service's context). */
export interface ArtifactSettings {
  limits: ArtifactLimits;
  /** Where uploads are received before they are stored: the data directory's, 0700. */
  uploadDir: string;
}

/** An upload's temporary file older than this was left by a process that stopped mid-upload. */
const LEFT_OVER_AFTER_MS = 3_600_000;

/**
 * The settings in force, and the directory uploads are received in (`<data dir>/artifact-uploads`, 0700), emptied of
 * what an earlier process left there mid-upload.
 */
export function artifactSettings(dataDir: string, given: Partial<ArtifactLimits> = {}): ArtifactSettings {
  const uploadDir = join(dataDir, 'artifact-uploads');
  mkdirSync(uploadDir, { recursive: true, mode: 0o700 });
  for (const name of readdirSync(uploadDir)) {
    const file = join(uploadDir, name);
    if (Date.now() - statSync(file).mtimeMs > LEFT_OVER_AFTER_MS) rmSync(file, { force: true });
  }
  return { limits: { ...DEFAULT_ARTIFACT_LIMITS, ...given }, uploadDir };
}
