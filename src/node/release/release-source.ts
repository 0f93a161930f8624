// Where a release's three files come from (docs/operations.md "Releases"): the service, or a directory at hand
// (`upgrade --from FILE`, the staged update in var/updates/). Either way each file is copied once, streamed with a
// cap and hashed as it goes, into a private directory of the caller's: what is verified is that copy, and only that
// copy is used after. A file read again from where it was found could have been swapped in between.
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { saveBounded, type SavedStream } from '../../lib/bounded-stream.js';

export interface ReleaseSource {
  /** Copies the release's file `name` into `file`, at most `maxBytes` of it: its size and SHA-256. */
  copy(name: string, file: string, maxBytes: number): Promise<SavedStream>;
}

/** The files in `dir`, as `npm run release` names them. */
export function directoryReleaseSource(dir: string): ReleaseSource {
  return {
    copy: (name, file, maxBytes) => saveBounded(createReadStream(join(dir, name)), file, maxBytes),
  };
}
