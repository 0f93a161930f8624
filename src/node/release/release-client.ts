// The node's client for the releases the service publishes (docs/api.md "Releases"): the newest one and its files,
// with the node credential. A client of its own beside service-client.ts, which it sends through. Every answer is
// read within a cap (docs/operations.md "Bounded downloads"): the `latest` document in memory, the files streamed
// to disk by release-source.ts's contract.
import { Value } from '@sinclair/typebox/value';
import { LatestReleaseResponse } from '../../contract/releases.js';
import { SvcError } from '../../contract/errors.js';
import type { SavedStream } from '../../lib/bounded-stream.js';
import { isReleaseVersion } from '../../lib/release-manifest.js';
import type { ServiceClient } from '../service/service-client.js';
import type { ReleaseSource } from './release-source.js';

/** Long enough for the tarball with its runtime (~35 MB) on a slow uplink; a stalled download still ends. */
const DOWNLOAD_DEADLINE_MS = 15 * 60_000;
/** The `latest` document is a few hundred bytes. */
const MAX_LATEST_BYTES = 64 * 1024;

export class ReleaseClient {
  readonly #client: ServiceClient;
  readonly #credential: string;

  constructor(client: ServiceClient, nodeCredential: string) {
    this.#client = client;
    this.#credential = nodeCredential;
  }

  async latest(platform: string): Promise<LatestReleaseResponse> {
    const path = `/v1/swarm/releases/latest?platform=${encodeURIComponent(platform)}`;
    const latest = (
      await this.#client.call<LatestReleaseResponse>({
        method: 'GET',
        path,
        bearer: this.#credential,
        retrySafe: true,
        maxBytes: MAX_LATEST_BYTES,
      })
    ).body;
    // The version names files on this host (var/updates/, a temp directory): a separator or `..` in it is refused.
    if (typeof latest?.version !== 'string' || !isReleaseVersion(latest.version)) {
      throw new SvcError(
        'internal',
        `the service at ${this.#client.baseUrl} named a release version that is not usable: ${JSON.stringify(latest?.version)?.slice(0, 80)}`,
      );
    }
    // Every field is read later (the size shown, the files fetched): one missing is named now, with the service
    // that left it out, rather than failing as this program's own error where it is first read.
    const wrong = Value.Errors(LatestReleaseResponse, latest).First();
    if (wrong !== undefined) {
      const field = wrong.path.replace(/^\//, '').replaceAll('/', '.');
      throw new SvcError(
        'failed',
        `the service at ${this.#client.baseUrl} answered the newest release without a usable ${field} (${wrong.message.toLowerCase()}); nothing was downloaded`,
        {
          remedy: `The service is not one this swarm-node can upgrade from: check the node's base URL (swarm-node config get base_url), or tell its operator that /v1/swarm/releases/latest lacks ${field} (docs/api.md "Releases").`,
        },
      );
    }
    return latest;
  }

  /** The files of `version` (the paths are ours, not the answer's URLs): what the caller asked for, by name. */
  source(version: string): ReleaseSource {
    if (!isReleaseVersion(version)) throw new SvcError('usage', `${JSON.stringify(version)} is not a release version`);
    return {
      copy: async (name, file, maxBytes) =>
        (
          await this.#client.call<SavedStream>({
            method: 'GET',
            path: `/v1/swarm/releases/${encodeURIComponent(version)}/${encodeURIComponent(name)}`,
            bearer: this.#credential,
            saveTo: { file, maxBytes },
            retrySafe: true,
            deadlineMs: DOWNLOAD_DEADLINE_MS,
            headers: { accept: '*/*' },
          })
        ).body,
    };
  }
}
