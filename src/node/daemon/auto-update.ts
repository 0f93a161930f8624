// Auto-update, the daemon's half (docs/operations.md "Auto-update"; as cloudflared's and GitHub's runner's). On an
// interval, jittered so that a fleet does not ask at once, it asks the service for the newest release;
// a newer one is downloaded and verified exactly as `swarm-node upgrade` does (release/obtain-release.ts: streamed
// with caps, the signed manifest's version the one the service named and newer than this one's) and staged in
// var/updates/ (release/staged-update.ts). From then on no new work is taken; once the runs in flight
// have ended (never stopped for an update) the daemon stops with exit 9, and the start that follows switches to the
// staged release first (install/pending-update.ts, as root). One log line per check says how it went:
// up_to_date, update_available, update_failed (with the reason; the daemon goes on with its version and asks again
// at the next interval), updated (logged by the new daemon at its first tick, which ends the switch's probation).
import { compareVersions, hostPlatform } from '../../lib/release-manifest.js';
import { obtainRelease } from '../release/obtain-release.js';
import { ReleaseClient } from '../release/release-client.js';
import { assertMovesForward } from '../release/release-order.js';
import {
  clearStagedUpdate,
  downloadDir,
  readUpdateState,
  removeUpdateState,
  stageUpdate,
  writeUpdateState,
} from '../release/staged-update.js';
import { trustedReleaseKeys } from '../release/trusted-keys.js';
import type { NodeCaller } from '../work/caller.js';
import { messageOf } from '../../contract/errors.js';
import { firstSentence, type DaemonCore } from './core.js';

export interface AutoUpdateOptions {
  enabled: boolean;
  /**
   * The version of the release this daemon runs from (its package.json), which the newest is compared with, as
   * upgrade compares the installed release's: the program's own version, which is read from there.
   */
  releaseVersion: string;
  /** What turned it off, for the log line (not_installed: the daemon does not run from an installed release). */
  offBy?: 'flag' | 'config' | 'not_installed' | 'unsupervised';
  intervalMs: number;
  /** The node's var/ (updates/ is staged there) and etc/ (release-keys/). */
  varDir: string;
  etcDir: string;
  /** SVC_RELEASE_TRUST_KEY: one more key to trust, as for swarm-node upgrade. */
  trustKeyFile: string | undefined;
}

/** ±10 % around the interval: nodes started together drift apart within a few checks. */
const JITTER = 0.1;
const OFF_BY = {
  flag: '--no-autoupdate',
  config: 'config auto_update',
  not_installed: 'not an installed release',
  unsupervised: 'started by hand: nothing would start it again after the update (systemd, or daemon --supervised, does)',
} as const;
const FIRST_CHECK_FLOOR_MS = 10 * 60_000;
const FIRST_CHECK_SPREAD_MS = 50 * 60_000;

export class AutoUpdater {
  readonly #core: DaemonCore;
  readonly #options: AutoUpdateOptions;
  readonly #inFlight: () => number;
  readonly #restart: (version: string) => void;
  readonly #random: () => number;
  #nextCheckAt: number;
  #checking = false;
  /** The version staged: no new work from now on, and a restart once nothing is in flight. */
  #staged: string | undefined;
  #probationChecked = false;

  constructor(
    core: DaemonCore,
    options: AutoUpdateOptions,
    inFlight: () => number,
    restart: (version: string) => void,
    random = Math.random,
  ) {
    this.#core = core;
    this.#options = options;
    this.#inFlight = inFlight;
    this.#restart = restart;
    this.#random = random;
    this.#nextCheckAt = this.#firstCheckAt(core.now());
  }

  /**
   * One interval after the last check, kept across restarts; never checked (a new node): within its first hour.
   * Either way not in the first 10 minutes (a daemon just started, by an update or by hand, has other things to
   * do) and at a random point of the 50 after, so that a fleet restarted at once does not ask at once. An interval
   * shorter than that (a test's) scales both down.
   */
  #firstCheckAt(now: number): number {
    const { intervalMs } = this.#options;
    const spread =
      now + Math.min(intervalMs, FIRST_CHECK_FLOOR_MS) + Math.round(this.#random() * Math.min(intervalMs, FIRST_CHECK_SPREAD_MS));
    const last = Date.parse(readUpdateState(this.#options.varDir, 'checked')?.at ?? '');
    return Number.isFinite(last) ? Math.max(spread, last + this.#jittered()) : spread;
  }

  /** The start: whether it is on, and what the start before this one left to say. */
  start(): void {
    const { log } = this.#core;
    const { varDir } = this.#options;
    const failure = readUpdateState(varDir, 'failure');
    if (failure !== undefined) {
      log.warn('update_failed', { version: failure.version, error: failure.reason, at: failure.at });
      removeUpdateState(varDir, 'failure');
    }
    if (!this.#options.enabled) {
      log.info('auto_update_off', { by: OFF_BY[this.#options.offBy ?? 'config'] });
      // Something staged before it was turned off is not switched to.
      clearStagedUpdate(varDir);
      return;
    }
    log.info('auto_update_on', {
      interval_seconds: Math.round(this.#options.intervalMs / 1000),
      first_check_in_seconds: Math.round((this.#nextCheckAt - this.#core.now()) / 1000),
    });
  }

  /** True once an update is staged: the daemon takes no new work and waits for its runs to end. */
  get holdsWork(): boolean {
    return this.#staged !== undefined;
  }

  /** Every tick. `caller` is this node when the service is usable (undefined otherwise: no check then). */
  tick(caller: NodeCaller | undefined, now: number): void {
    if (!this.#probationChecked) this.#endProbation();
    if (this.#staged !== undefined) {
      if (this.#inFlight() === 0) this.#restart(this.#staged);
      return;
    }
    if (!this.#options.enabled || this.#checking || caller === undefined || now < this.#nextCheckAt) return;
    this.#checking = true;
    this.#nextCheckAt = now + this.#jittered();
    try {
      writeUpdateState(this.#options.varDir, 'checked', { at: new Date(now).toISOString() });
    } catch (error) {
      // var/ not writable: the check goes on; a restart only asks sooner than it would have.
      this.#core.log.warn('update_check_unrecorded', { error: messageOf(error) });
    }
    this.#core.track(
      this.#check(caller).finally(() => {
        this.#checking = false;
      }),
    );
  }

  /** The first tick of the daemon an update switched to: it is healthy, the switch stays. */
  #endProbation(): void {
    this.#probationChecked = true;
    const probation = readUpdateState(this.#options.varDir, 'probation');
    if (probation === undefined || probation.to_version !== this.#options.releaseVersion) return;
    removeUpdateState(this.#options.varDir, 'probation');
    this.#core.log.info('updated', {
      from_version: probation.from_version,
      to_version: probation.to_version,
      switched_at: probation.switched_at,
    });
  }

  async #check(caller: NodeCaller): Promise<void> {
    const { log } = this.#core;
    const version = this.#options.releaseVersion;
    const platform = hostPlatform();
    let latest: string | undefined;
    try {
      const releases = new ReleaseClient(this.#core.client, caller.bearer);
      latest = (await releases.latest(platform)).version;
      if (compareVersions(latest, version) <= 0) {
        log.info('up_to_date', { version, latest });
        return;
      }
      const rolledBack = readUpdateState(this.#options.varDir, 'rolledBack');
      if (rolledBack?.version === latest) {
        log.info('up_to_date', {
          version,
          latest,
          note: `${latest} was rolled back here before and is not taken again; a newer release is`,
        });
        return;
      }
      log.info('update_available', { version, latest });
      // The keys are read now, not at start: a key the operator added since counts.
      const keys = trustedReleaseKeys(this.#options.etcDir, this.#options.trustKeyFile);
      const verified = await obtainRelease(releases.source(latest), { version: latest, platform }, downloadDir(this.#options.varDir), keys);
      assertMovesForward(verified.manifest.version, version, undefined);
      stageUpdate(this.#options.varDir, verified, new Date(this.#core.now()));
      this.#staged = latest;
      log.info('update_staged', {
        version,
        latest,
        signed_by: verified.signedBy.key_id,
        in_flight_runs: this.#inFlight(),
        note: 'no new work; restarting once the runs in flight end',
      });
    } catch (error) {
      clearStagedUpdate(this.#options.varDir);
      log.warn('update_failed', {
        version,
        ...(latest === undefined ? {} : { latest }),
        error: firstSentence(messageOf(error)),
        note: 'nothing switched; this version runs on',
        next_check_in_seconds: Math.round((this.#nextCheckAt - this.#core.now()) / 1000),
      });
    }
  }

  #jittered(): number {
    return Math.round(this.#options.intervalMs * (1 - JITTER + 2 * JITTER * this.#random()));
  }
}
