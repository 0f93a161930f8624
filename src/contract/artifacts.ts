// The artifacts of a run (docs/api.md "Run artifacts"): what the node, the service and the CLI agree on beyond the
// limits in ./jobs.ts. A name is checked by all three (the node before it uploads, the service before it stores,
// the CLI before it writes a download), and a transfer's time is bounded by one rate both ends share.
import { Type, type Static } from '@sinclair/typebox';
import { ARTIFACT_NAME_PATTERN, ArtifactView } from './jobs.js';

const ARTIFACT_NAME = new RegExp(ARTIFACT_NAME_PATTERN);

/** A plain file name: no directory, no leading dot, nothing a shell or a browser reads as more than a name. */
export function isArtifactName(name: string): boolean {
  return ARTIFACT_NAME.test(name);
}

/**
 * An upload stalled this long, or, from then on, slower on average than ARTIFACT_MIN_BYTES_PER_SECOND since it
 * began, is cut off (408) by the service; the node gives a transfer as long as that rate allows.
 */
export const ARTIFACT_IDLE_SECONDS = 60;
/** 16 KiB/s: a 64 MiB artifact may take up to 69 minutes; any link a node is served over does far better. */
export const ARTIFACT_MIN_BYTES_PER_SECOND = 16 * 1024;

/** The longest one artifact of `bytes` may take to go up or down, at the slowest rate the service takes. */
export function artifactTransferDeadlineMs(bytes: number): number {
  return (ARTIFACT_IDLE_SECONDS + Math.ceil(bytes / ARTIFACT_MIN_BYTES_PER_SECOND)) * 1000 + 30_000;
}

// PUT /v1/swarm/runs/{run_id}/artifacts/{name} (node): the artifact as stored; created false for the same bytes again.
export const ArtifactUpload = Type.Composite([ArtifactView, Type.Object({ created: Type.Boolean() })]);
export type ArtifactUpload = Static<typeof ArtifactUpload>;

export const ArtifactParams = Type.Object({
  run_id: Type.String({ maxLength: 64 }),
  name: Type.String({ pattern: ARTIFACT_NAME_PATTERN }),
});
export type ArtifactParams = Static<typeof ArtifactParams>;
export const ArtifactLeaseQuery = Type.Object({ lease_id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false });
export type ArtifactLeaseQuery = Static<typeof ArtifactLeaseQuery>;
