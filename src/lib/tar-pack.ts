// A tar made the same way every time from entries given in order: times and owners zeroed, so the same entries
// give the same bytes. The node packs bundles with it (src/node/agents/bundle-pack.ts); the upload tests craft the
// archives an honest packer never writes (a symlink, a device) with it too.
import tar from 'tar-stream';

export interface TarEntry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'fifo';
  mode: number;
  /** A file's contents. */
  data?: Buffer;
  /** Where a link points. */
  linkname?: string;
}

export async function tarOf(entries: readonly TarEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (chunk: unknown) => void chunks.push(chunk as Buffer));
  const done = new Promise<void>((resolve, reject) => {
    pack.on('end', resolve);
    pack.on('error', reject);
  });
  for (const entry of entries) {
    const header = {
      name: entry.name,
      type: entry.type,
      mode: entry.mode,
      mtime: new Date(0),
      uid: 0,
      gid: 0,
      uname: '',
      gname: '',
      ...(entry.linkname === undefined ? {} : { linkname: entry.linkname }),
    };
    if (entry.type === 'file') pack.entry({ ...header, size: entry.data?.length ?? 0 }, entry.data ?? Buffer.alloc(0));
    else pack.entry(header);
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}
