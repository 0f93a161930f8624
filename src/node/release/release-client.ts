// The node's client for the releases the service publishes (docs/api.md "Releases"): the newest one and its files,
// with the node credential. A client of its own beside service-client.ts, which it sends through.
import type { LatestReleaseResponse } from '../../contract/releases.js';
import { releaseFileNames } from '../../lib/release-manifest.js';
import type { ServiceClient } from '../service/service-client.js';

/** A release's bytes as downloaded: verified by verify-release.ts before anything of it is used. */
export interface DownloadedRelease {
  artifact: Buffer;
  manifest: Buffer;
  signature: Buffer;
}

/** Long enough for the tarball with its runtime (~35 MB) on a slow uplink; a stalled download still ends. */
const DOWNLOAD_DEADLINE_MS = 15 * 60_000;

export class ReleaseClient {
  readonly #client: ServiceClient;
  readonly #credential: string;

  constructor(client: ServiceClient, nodeCredential: string) {
    this.#client = client;
    this.#credential = nodeCredential;
  }

  async latest(platform: string): Promise<LatestReleaseResponse> {
    const path = `/v1/swarm/releases/latest?platform=${encodeURIComponent(platform)}`;
    return (await this.#client.call<LatestReleaseResponse>({ method: 'GET', path, bearer: this.#credential, retrySafe: true })).body;
  }

  /** The tarball, its manifest and the manifest's signature (the paths are ours, not the answer's URLs). */
  async download(version: string, platform: string): Promise<DownloadedRelease> {
    const names = releaseFileNames(version, platform);
    const get = async (name: string) =>
      (
        await this.#client.call<Buffer>({
          method: 'GET',
          path: `/v1/swarm/releases/${encodeURIComponent(version)}/${encodeURIComponent(name)}`,
          bearer: this.#credential,
          binary: true,
          retrySafe: true,
          deadlineMs: DOWNLOAD_DEADLINE_MS,
          headers: { accept: '*/*' },
        })
      ).body;
    const manifest = await get(names.manifest);
    const signature = await get(names.signature);
    return { manifest, signature, artifact: await get(names.artifact) };
  }
}
