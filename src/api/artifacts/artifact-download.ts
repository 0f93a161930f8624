// An artifact's bytes as a download (docs/api.md "Run artifacts"): streamed from its chunks, always an attachment
// with its guessed type and nosniff (content-types.ts), so an agent's file is never rendered on the service's origin.
import type { FastifyReply } from 'fastify';
import type { ArtifactRow, ArtifactStore } from './artifact-store.js';
import { blobStream } from './blob-chunks.js';
import { artifactContentType } from './content-types.js';

export function sendArtifact(reply: FastifyReply, artifacts: ArtifactStore, row: ArtifactRow): FastifyReply {
  return (
    reply
      .type(artifactContentType(row.name))
      .header('x-content-type-options', 'nosniff')
      .header('content-length', String(row.size_bytes))
      // The name is a plain file name (ARTIFACT_NAME_PATTERN): safe inside the quotes as it is.
      .header('content-disposition', `attachment; filename="${row.name}"`)
      .send(blobStream(artifacts, row.blob_id, row.size_bytes))
  );
}
