// Which agents this node runs, how often, and under what daily cap (table `registrations`).
import { prepared, type SqliteDatabase } from '../../lib/sqlite.js';

export interface Registration {
  agent_id: string;
  every_seconds: number | null;
  daily_cap_cents: number | null;
  /** The input runs start from (JSON of an object), null for none. */
  default_input_json: string | null;
  /** The service's schedule that runs it on this node; null: none, or an interval of the daemon's own. */
  schedule_id: string | null;
  created_at: number;
  updated_at: number;
}

export function upsertRegistration(
  db: SqliteDatabase,
  registration: {
    agent_id: string;
    every_seconds: number | null;
    daily_cap_cents: number | null;
    default_input_json: string | null;
    schedule_id: string | null;
  },
  now: number,
): { created: boolean; registration: Registration } {
  return db
    .transaction(() => {
      const existed = prepared(db, 'SELECT 1 FROM registrations WHERE agent_id = ?').get(registration.agent_id) !== undefined;
      prepared(
        db,
        `INSERT INTO registrations (agent_id, every_seconds, daily_cap_cents, default_input_json, schedule_id, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (agent_id) DO UPDATE SET every_seconds = excluded.every_seconds, daily_cap_cents = excluded.daily_cap_cents,
         default_input_json = excluded.default_input_json, schedule_id = excluded.schedule_id, updated_at = excluded.updated_at`,
      ).run(
        registration.agent_id,
        registration.every_seconds,
        registration.daily_cap_cents,
        registration.default_input_json,
        registration.schedule_id,
        now,
        now,
      );
      return { created: !existed, registration: getRegistration(db, registration.agent_id)! };
    })
    .immediate();
}

export function getRegistration(db: SqliteDatabase, agentId: string): Registration | undefined {
  return prepared<[string], Registration>(db, 'SELECT * FROM registrations WHERE agent_id = ?').get(agentId);
}

/** A registration's stored input (register --input) as an object; null when none is stored. */
export function storedDefaultInput(registration: Pick<Registration, 'default_input_json'>): Record<string, unknown> | null {
  return registration.default_input_json === null ? null : (JSON.parse(registration.default_input_json) as Record<string, unknown>);
}

/** The input a run of the agent starts from (register --input); undefined when none is stored. */
export function defaultInputOf(db: SqliteDatabase, agentId: string): Record<string, unknown> | undefined {
  const row = prepared<[string], Pick<Registration, 'default_input_json'>>(
    db,
    'SELECT default_input_json FROM registrations WHERE agent_id = ?',
  ).get(agentId);
  return row === undefined ? undefined : (storedDefaultInput(row) ?? undefined);
}

export function listRegistrations(db: SqliteDatabase): Registration[] {
  return prepared<[], Registration>(db, 'SELECT * FROM registrations ORDER BY agent_id').all();
}

export function deleteRegistration(db: SqliteDatabase, agentId: string): boolean {
  return prepared(db, 'DELETE FROM registrations WHERE agent_id = ?').run(agentId).changes === 1;
}

/** The service's schedule now runs the agent here (moved there by the daemon, or made by register --every). */
export function recordScheduleId(db: SqliteDatabase, agentId: string, scheduleId: string): void {
  prepared(db, 'UPDATE registrations SET schedule_id = ? WHERE agent_id = ?').run(scheduleId, agentId);
}
