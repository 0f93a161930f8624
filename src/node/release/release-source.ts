// Where a release's three files come from (docs/operations.md "Releases"): the service, or a directory at hand
// (`upgrade --from FILE`, the staged update in var/updates/). Either way each file is copied once, streamed with a
// cap and hashed as it goes, into a private directory of the caller's: what is verified is that copy, and only that
// copy is used after. A file read again from where it was found could have been swapped in between.
import { closeSync, constants, createReadStream, fstatSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../../contract/errors.js';
import { saveBounded, type SavedStream } from '../../lib/bounded-stream.js';

export interface ReleaseSource {
  /** Copies the release's file `name` into `file`, at most `maxBytes` of it: its size and SHA-256. */
  copy(name: string, file: string, maxBytes: number): Promise<SavedStream>;
}

/**
 * The files in `dir`, as `npm run release` names them. Each must be a regular file: root reads var/updates/, which
 * the service user writes, and a FIFO or a device there must not hold up the daemon's start or feed it without end.
 */
export function directoryReleaseSource(dir: string): ReleaseSource {
  return {
    copy: async (name, file, maxBytes) => {
      const path = join(dir, name);
      const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
      if (!fstatSync(fd).isFile()) {
        closeSync(fd);
        throw new SvcError('release_unverified', `${path} is not a regular file; nothing was installed`);
      }
      return saveBounded(createReadStream(path, { fd }), file, maxBytes);
    },
  };
}
