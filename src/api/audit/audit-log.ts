// What a user can look back on (docs/api.md "Audit"): every sign-in, token issue and revocation, enrolment, removal,
// credential rotation, upload and change of the current upload, with when, the client address and the user agent.
// Written in the transaction of what it records, so the log never tells of something that did not happen.
import type { AuditEvent, AuditKind } from '../../contract/auth.js';
import { isoTime, type Clock } from '../../lib/clock.js';
import { timeOrderedId } from '../../lib/time-ordered-id.js';
import type { ClientSeen } from '../mail/messages.js';
import type { Store } from '../store/store.js';

export interface AuditLog {
  record(userId: string, kind: AuditKind, client: ClientSeen | undefined, detail?: Record<string, unknown>): Promise<void>;
  /** The user's events, newest first: `limit` of them older than the event `before`. */
  list(userId: string, options: { limit: number; before?: string }): Promise<AuditEvent[]>;
}

export function createAuditLog(store: Store, clock: Clock): AuditLog {
  return {
    async record(userId, kind, client, detail = {}) {
      const at = clock.now();
      await store.db
        .insertInto('audit_events')
        .values({
          event_id: timeOrderedId(at),
          user_id: userId,
          kind,
          at,
          client_address: client?.client_address ?? null,
          user_agent: client?.user_agent ?? null,
          detail_json: JSON.stringify(detail),
        })
        .execute();
    },
    async list(userId, { limit, before }) {
      let query = store.db.selectFrom('audit_events').selectAll().where('user_id', '=', userId);
      if (before !== undefined) query = query.where('event_id', '<', before);
      const rows = await query.orderBy('event_id', 'desc').limit(limit).execute();
      return rows.map((row) => ({
        event_id: row.event_id,
        kind: row.kind,
        at: isoTime(row.at),
        client_address: row.client_address,
        user_agent: row.user_agent,
        detail: JSON.parse(row.detail_json) as Record<string, unknown>,
      }));
    },
  };
}
