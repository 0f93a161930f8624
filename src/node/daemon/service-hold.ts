// When no agent runs at all (docs/operations.md "Logs", paused_all): this host is not an enrolled node, its
// credential was refused, or the service cannot be reached. Every agent is held, the reason logged once and recorded
// for `status`, and the service is asked again (a wallet read: reachable? credential accepted?) on a backoff, or at
// once when the credential changes. The daemon works with the node's own credential, never the user's JWT: a node
// does not stop when a 30-day token expires.
import { SvcError, messageOf } from '../../contract/errors.js';
import { currentNodeCredential, readCredentials, type NodeEnrollment } from '../identity/credentials.js';
import { recordGlobalPause, type GlobalPauseReason } from '../store/daemon-state.js';
import type { NodeCaller } from '../work/caller.js';
import { firstSentence, type DaemonCore } from './core.js';
import type { LogFields } from './log.js';
import { CappedBackoff } from '../../lib/backoff.js';
import { nextBackoff, OUTAGE_PROBE_CAP_MS, OUTAGE_PROBE_FIRST_MS } from './timing.js';

export class ServiceHold {
  readonly #core: DaemonCore;
  /** Called when a probe finds the service usable again: unsettled rows are settled before anything is scheduled. */
  readonly #onReady: () => void;
  readonly #callerFor: (node: NodeEnrollment & { credential: string }) => NodeCaller;
  /** Called once when the service says this node was removed from its user's nodes: the daemon stops for good. */
  readonly #onRemoved: (error: SvcError) => void;
  #removed = false;
  #caller: NodeCaller | undefined;
  /** The service must be asked before anything runs: at start, after an outage, a refused token or a new sign-in. */
  #probeNeeded = true;
  #probeAt = 0;
  /** Probes of an unreachable service: soon, to a short cap (timing.ts). */
  readonly #outageProbes: CappedBackoff;
  /** Probes of a refused credential: slow, doubling to MAX_BACKOFF_MS (it does not fix itself). */
  #credentialWait: number | undefined;
  #probing = false;
  /** The credential the service refused (401): not used again until it changes or a slow re-check accepts it. */
  #rejectedCredential: string | undefined;
  #globalPause: { reason: GlobalPauseReason; since: number; until: number | null } | undefined;

  constructor(
    core: DaemonCore,
    callerFor: (node: NodeEnrollment & { credential: string }) => NodeCaller,
    onReady: () => void,
    onRemoved: (error: SvcError) => void,
  ) {
    this.#core = core;
    this.#callerFor = callerFor;
    this.#onReady = onReady;
    this.#onRemoved = onRemoved;
    this.#outageProbes = new CappedBackoff(Math.min(OUTAGE_PROBE_FIRST_MS, core.backoffMs), OUTAGE_PROBE_CAP_MS);
  }

  /** The last probe found the service reachable and the token accepted, and nothing has been refused since. */
  get ready(): boolean {
    return !this.#probeNeeded;
  }

  /** The caller the last tick built, while the service is usable; undefined during a hold. */
  get current(): NodeCaller | undefined {
    return this.ready ? this.#caller : undefined;
  }

  /**
   * This node as it asks for work, read from its credentials every tick (a rotated credential is picked up without
   * a restart); otherwise every agent is held and the reason logged once.
   */
  caller(): NodeCaller | undefined {
    let node: NodeEnrollment | undefined;
    try {
      node = readCredentials(this.#core.credentialsFile).node;
    } catch (error) {
      this.#pauseAll('credentials_unreadable', null, { error: messageOf(error) });
      return undefined;
    }
    if (node?.credential === undefined) {
      this.#pauseAll('not_enrolled', null, { remedy: 'swarm-node install (or swarm-node enroll) with a deploy token' });
      return undefined;
    }
    this.#core.log.mask(node.credential);
    if (this.#caller?.bearer !== node.credential) {
      // A credential written while the daemon runs (enroll, credential rotate, an operator's edit) is checked with the
      // service before anything uses it: a refused one holds everything without a single execute.
      if (this.#caller !== undefined) this.#askAgain();
      this.#caller = this.#callerFor({ ...node, credential: node.credential });
    }
    // A problem that is gone does not resume anything by itself: the probe that #pauseAll asked for decides.
    return this.#caller;
  }

  /** Asks the service again when its backoff is up, or at once for a token other than the one it refused. */
  probeIfDue(caller: NodeCaller, now: number): void {
    const newCredential = this.#rejectedCredential !== undefined && caller.bearer !== this.#rejectedCredential;
    if (!this.#probing && (now >= this.#probeAt || newCredential)) this.#core.track(this.#probe(caller));
  }

  /**
   * An unreachable service or a refused credential holds every agent until a probe succeeds; this node removed from
   * its user's nodes stops the daemon. True when it was one of them.
   */
  onServiceError(error: unknown, caller: NodeCaller): boolean {
    return this.#onError(error, caller, false);
  }

  /** `byProbe`: the error is a probe's, the only kind that moves the next probe further out. */
  #onError(error: unknown, caller: NodeCaller, byProbe: boolean): boolean {
    if (!(error instanceof SvcError)) return false;
    if (error.code === 'node_removed') {
      // The answer to a credential replaced since (a new enrollment written meanwhile) says nothing of the new one.
      if (currentNodeCredential(this.#core.credentialsFile, caller.node_id) !== caller.bearer) return false;
      this.#stopForGood(error, caller);
      return true;
    }
    if (error.code === 'service_unreachable' || error.code === 'service_unavailable') {
      this.#holdForProbe('service_unreachable', error, byProbe);
      return true;
    }
    if (error.code === 'unauthorized') {
      // Refused with a credential rotated away since (a run that began before the rotation): not this node's
      // credential refused. The caller's own handling (a retry, a settlement) goes on with the new one.
      if (currentNodeCredential(this.#core.credentialsFile, caller.node_id) !== caller.bearer) return false;
      this.#rejectedCredential = caller.bearer;
      this.#holdForProbe('credential_rejected', error, byProbe);
      return true;
    }
    return false;
  }

  /**
   * Like GitHub's runner whose registration was deleted, the daemon does not retry a node that will never be
   * accepted again: nothing more runs, one line says why and what to do, and the daemon exits 8 (the unit does not
   * restart it).
   */
  #stopForGood(error: SvcError, caller: NodeCaller): void {
    this.#probeNeeded = true;
    if (this.#removed) return;
    this.#removed = true;
    this.#core.log.error('node_removed', { node_id: caller.node_id, error: firstSentence(error.message), remedy: error.remedy });
    this.#onRemoved(error);
  }

  /** Reachable, and the credential accepted: the wallet answers. */
  async #probe(caller: NodeCaller): Promise<void> {
    this.#probing = true;
    try {
      const wallet = await this.#core.client.wallet(caller.bearer);
      // The credential changed meanwhile: this answer says nothing about the new one, which is asked at the next tick.
      if (caller !== this.#caller) return;
      this.#rejectedCredential = undefined;
      this.#outageProbes.reset();
      this.#credentialWait = undefined;
      if (this.#globalPause !== undefined) this.#resumeAll();
      this.#core.log.info('service_ready', { user: wallet.user_id, balance_cents: wallet.balance_cents });
      this.#probeNeeded = false;
      this.#onReady();
    } catch (error) {
      if (caller !== this.#caller) return;
      // This probe failed: the next one waits longer (up to its cap). Any other refusal of a read is as good as an
      // outage here: ask again later.
      if (!this.#onError(error, caller, true)) this.#holdForProbe('service_unreachable', error, true);
    } finally {
      this.#probing = false;
    }
  }

  #holdForProbe(reason: 'service_unreachable' | 'credential_rejected', error: unknown, byProbe: boolean): void {
    const sameHold = this.#probeNeeded && this.#globalPause?.reason === reason;
    // A result or a renewal failing during the hold is the same outage: the probe already planned stays as it is.
    if (sameHold && !byProbe) return;
    if (!sameHold) {
      this.#outageProbes.reset();
      this.#credentialWait = undefined;
    }
    const waitMs =
      reason === 'service_unreachable'
        ? this.#outageProbes.next()
        : (this.#credentialWait = nextBackoff(this.#credentialWait, this.#core.backoffMs));
    this.#probeAt = this.#core.now() + waitMs;
    this.#probeNeeded = true;
    this.#core.wakeAt(this.#probeAt);
    const remedy =
      reason === 'credential_rejected'
        ? 'enroll the node anew, signed in (picked up without a restart): sudo swarm-node install --reenroll'
        : undefined;
    this.#pauseAll(reason, this.#probeAt, { error: firstSentence(messageOf(error)), remedy });
  }

  /** Holds every agent; logs only when the reason changes (once per outage, once per sign-in problem). */
  #pauseAll(reason: GlobalPauseReason, until: number | null, fields: LogFields): void {
    const now = this.#core.now();
    const previous = this.#globalPause;
    if (previous?.reason === reason) {
      if (previous.until !== until) {
        previous.until = until;
        this.#core.record(() => recordGlobalPause(this.#core.db, previous, now));
      }
      return;
    }
    const pause = { reason, since: now, until };
    this.#globalPause = pause;
    this.#core.record(() => recordGlobalPause(this.#core.db, pause, now));
    this.#core.log.warn('paused_all', { reason, ...fields, ...(until === null ? {} : { next_check_at: new Date(until).toISOString() }) });
    // A new enrollment must be checked with the service before anything runs.
    if (isCredentialProblem(reason)) this.#askAgain();
  }

  /** Nothing runs until a probe, made at the next tick, finds the service usable. */
  #askAgain(): void {
    this.#probeNeeded = true;
    this.#probeAt = 0;
  }

  #resumeAll(): void {
    const previous = this.#globalPause;
    if (previous === undefined) return;
    const now = this.#core.now();
    this.#globalPause = undefined;
    this.#core.record(() => recordGlobalPause(this.#core.db, null, now));
    this.#core.log.info('resumed_all', { after: previous.reason, paused_seconds: Math.round((now - previous.since) / 1000) });
  }
}

function isCredentialProblem(reason: GlobalPauseReason): boolean {
  return reason === 'not_enrolled' || reason === 'credentials_unreadable';
}
