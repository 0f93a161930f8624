// When no agent runs at all (issue 6 §4): this node is not signed in, its token expired or was refused, or the
// service cannot be reached. Every agent is held, the reason logged once and recorded for `status`, and the service
// is asked again (a wallet read: reachable? token accepted?) on a backoff, or at once when the token changes.
import { SvcError } from '../../contract/errors.js';
import { readCredentials, type StoredJwt } from '../credentials.js';
import { recordGlobalPause, type GlobalPauseReason } from '../store/daemon-state.js';
import { daysLeft, expiresSoon } from '../token.js';
import { DAY_MS } from '../utc-day.js';
import { firstSentence, messageOf, type DaemonCore } from './core.js';
import type { LogFields } from './log.js';
import { nextBackoff } from './timing.js';

export class ServiceHold {
  readonly #core: DaemonCore;
  /** Called when a probe finds the service usable again: unsettled rows are settled before anything is scheduled. */
  readonly #onReady: () => void;
  /** The service must be asked before anything runs: at start, after an outage, a refused token or a new sign-in. */
  #probeNeeded = true;
  #probeAt = 0;
  #probeBackoff: number | undefined;
  #probing = false;
  /** The token the service refused (401): not used again until it changes or a slow re-check accepts it. */
  #rejectedToken: string | undefined;
  #globalPause: { reason: GlobalPauseReason; since: number; until: number | null } | undefined;
  #expiryWarned: { token: string; at: number } | undefined;

  constructor(core: DaemonCore, onReady: () => void) {
    this.#core = core;
    this.#onReady = onReady;
  }

  /** The last probe found the service reachable and the token accepted, and nothing has been refused since. */
  get ready(): boolean {
    return !this.#probeNeeded;
  }

  /** The stored JWT when it can be used; otherwise every agent is held and the reason logged once. */
  signedIn(now: number): StoredJwt | undefined {
    let jwt: StoredJwt | undefined;
    try {
      jwt = readCredentials(this.#core.credentialsFile).jwt;
    } catch (error) {
      this.#pauseAll('credentials_unreadable', null, { error: messageOf(error) });
      return undefined;
    }
    if (jwt === undefined) {
      this.#pauseAll('not_signed_in', null, { remedy: 'swarm-node login' });
      return undefined;
    }
    this.#core.log.mask(jwt.token);
    if (jwt.exp * 1000 <= now) {
      this.#pauseAll('token_expired', null, { expires_at: new Date(jwt.exp * 1000).toISOString(), remedy: 'swarm-node login' });
      return undefined;
    }
    // A sign-in problem that is gone does not resume anything by itself: the probe that #pauseAll asked for decides.
    return jwt;
  }

  warnIfExpiring(jwt: StoredJwt, now: number): void {
    const expMs = jwt.exp * 1000;
    if (!expiresSoon(expMs, now)) return;
    const warned = this.#expiryWarned;
    if (warned !== undefined && warned.token === jwt.token && now - warned.at < DAY_MS) return;
    this.#expiryWarned = { token: jwt.token, at: now };
    this.#core.log.warn('token_expiring', { expires_at: new Date(expMs).toISOString(), days_left: daysLeft(expMs, now), remedy: 'swarm-node login' });
  }

  /** Asks the service again when its backoff is up, or at once for a token other than the one it refused. */
  probeIfDue(jwt: StoredJwt, now: number): void {
    const newToken = this.#rejectedToken !== undefined && jwt.token !== this.#rejectedToken;
    if (!this.#probing && (now >= this.#probeAt || newToken)) this.#core.track(this.#probe(jwt));
  }

  /** An unreachable service or a refused token holds every agent until a probe succeeds; true when it was one of them. */
  onServiceError(error: unknown, jwt: StoredJwt): boolean {
    if (!(error instanceof SvcError)) return false;
    if (error.code === 'service_unreachable' || error.code === 'service_unavailable') {
      this.#holdForProbe('service_unreachable', error);
      return true;
    }
    if (error.code === 'unauthorized') {
      this.#rejectedToken = jwt.token;
      this.#holdForProbe('token_rejected', error);
      return true;
    }
    return false;
  }

  /** Reachable, and the token accepted: the wallet answers. */
  async #probe(jwt: StoredJwt): Promise<void> {
    this.#probing = true;
    try {
      const wallet = await this.#core.client.wallet(jwt.token);
      this.#rejectedToken = undefined;
      this.#probeBackoff = undefined;
      if (this.#globalPause !== undefined) this.#resumeAll();
      this.#core.log.info('service_ready', { user: wallet.user_id, balance_cents: wallet.balance_cents });
      this.#probeNeeded = false;
      this.#onReady();
    } catch (error) {
      if (!this.onServiceError(error, jwt)) {
        // Any other refusal of a read is as good as an outage here: ask again later.
        this.#holdForProbe('service_unreachable', error);
      }
    } finally {
      this.#probing = false;
    }
  }

  #holdForProbe(reason: 'service_unreachable' | 'token_rejected', error: unknown): void {
    const sameHold = this.#probeNeeded && this.#globalPause?.reason === reason;
    this.#probeBackoff = nextBackoff(sameHold ? this.#probeBackoff : undefined, this.#core.backoffMs);
    this.#probeAt = this.#core.now() + this.#probeBackoff;
    this.#probeNeeded = true;
    const remedy = reason === 'token_rejected' ? 'swarm-node login (picked up without a restart)' : undefined;
    this.#pauseAll(reason, this.#probeAt, { error: firstSentence(messageOf(error)), remedy });
  }

  /** Holds every agent; logs only when the reason changes (once per outage, once per sign-in problem). */
  #pauseAll(reason: GlobalPauseReason, until: number | null, fields: LogFields): void {
    const now = this.#core.now();
    const previous = this.#globalPause;
    if (previous?.reason === reason) {
      if (previous.until !== until) {
        previous.until = until;
        recordGlobalPause(this.#core.db, previous, now);
      }
      return;
    }
    this.#globalPause = { reason, since: now, until };
    recordGlobalPause(this.#core.db, this.#globalPause, now);
    this.#core.log.warn('paused_all', { reason, ...fields, ...(until === null ? {} : { next_check_at: new Date(until).toISOString() }) });
    if (isCredentialProblem(reason)) {
      // A new sign-in must be checked with the service before anything runs.
      this.#probeNeeded = true;
      this.#probeAt = 0;
    }
  }

  #resumeAll(): void {
    const previous = this.#globalPause;
    if (previous === undefined) return;
    const now = this.#core.now();
    this.#globalPause = undefined;
    recordGlobalPause(this.#core.db, null, now);
    this.#core.log.info('resumed_all', { after: previous.reason, paused_seconds: Math.round((now - previous.since) / 1000) });
  }
}

function isCredentialProblem(reason: GlobalPauseReason): boolean {
  return reason === 'not_signed_in' || reason === 'token_expired' || reason === 'credentials_unreadable';
}
