// The release endpoints (docs/api.md "Releases"), additions to spec §4: what the service answers about
// the newest release, and where its files are. Downloads take a deploy token not yet used, or a node credential.
import { Type, type Static } from '@sinclair/typebox';

export const ReleasePlatform = Type.Union([Type.Literal('linux-x64'), Type.Literal('linux-arm64')]);

export const LatestReleaseQuery = Type.Object({ platform: Type.Optional(ReleasePlatform) }, { additionalProperties: false });
export type LatestReleaseQuery = Static<typeof LatestReleaseQuery>;

export const ReleaseFileParams = Type.Object({
  version: Type.String({ pattern: '^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$' }),
  file: Type.String({ pattern: '^[0-9A-Za-z][0-9A-Za-z.+_-]{0,160}$' }),
});
export type ReleaseFileParams = Static<typeof ReleaseFileParams>;

export const LatestReleaseResponse = Type.Object({
  version: Type.String(),
  platform: ReleasePlatform,
  /** The Node.js the artifact ships (runtime/bin/node), or null when the host brings its own. */
  runtime_node: Type.Union([Type.String(), Type.Null()]),
  artifact: Type.Object({ name: Type.String(), size_bytes: Type.Integer(), sha256: Type.String(), url: Type.String() }),
  sha256_url: Type.String(),
  /** Signed: the node checks it against the keys it trusts before it believes the sha256 above. */
  manifest_url: Type.String(),
  signature_url: Type.String(),
});
export type LatestReleaseResponse = Static<typeof LatestReleaseResponse>;
