// The agent upload endpoints (docs/api.md "Agent upload"), additions to spec §4: the JWT unlocks agent upload
// (spec §1.4, §5.4); these are the shapes of what the service answers and of a rollback's body.
import { Type, type Static } from '@sinclair/typebox';
import { DIGEST_PATTERN, VERSION_PATTERN } from './agent-bundle.js';

const Timestamp = Type.String({ description: 'ISO 8601, UTC' });

export const AgentVersion = Type.Object({
  agent_id: Type.String(),
  version: Type.String(),
  /** SHA-256 of the archive as uploaded, hex: what a run is pinned to and what a node verifies. */
  digest: Type.String(),
  size_bytes: Type.Integer(),
  files: Type.Integer(),
  unpacked_bytes: Type.Integer(),
  uploaded_at: Timestamp,
  current: Type.Boolean(),
});
export type AgentVersion = Static<typeof AgentVersion>;

// POST /v1/swarm/agents/{agent_id}/versions: 201 a new version (now current), 200 the same bytes again.
export const UploadResponse = Type.Composite([AgentVersion, Type.Object({ created: Type.Boolean() })]);
export type UploadResponse = Static<typeof UploadResponse>;

// GET /v1/swarm/agents/{agent_id}/versions, and the answer of PUT .../current
export const AgentVersionsResponse = Type.Object({
  agent_id: Type.String(),
  /** The version new runs execute; null: the node's built-in reference agent. */
  current: Type.Union([AgentVersion, Type.Null()]),
  /** Newest upload first. */
  versions: Type.Array(AgentVersion),
});
export type AgentVersionsResponse = Static<typeof AgentVersionsResponse>;

// PUT /v1/swarm/agents/{agent_id}/current: exactly one of the two names an uploaded version.
export const SetCurrentRequest = Type.Object(
  { version: Type.Optional(Type.String({ pattern: VERSION_PATTERN })), digest: Type.Optional(Type.String({ pattern: DIGEST_PATTERN })) },
  { additionalProperties: false },
);
export type SetCurrentRequest = Static<typeof SetCurrentRequest>;

export const BundleParams = Type.Object({ digest: Type.String({ maxLength: 128 }) });

// DELETE /v1/swarm/agents/{agent_id}/versions/{version}: the version by its label.
export const VersionParams = Type.Object({ agent_id: Type.String({ maxLength: 128 }), version: Type.String({ pattern: VERSION_PATTERN }) });
