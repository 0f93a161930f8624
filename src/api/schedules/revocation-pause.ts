// Revoking the JWT that made or last resumed a schedule ends its authority (docs/api.md "Schedules"): the schedule is
// paused at once, `creator_revoked`, in the transaction of the revocation's audit, and a resume with a fresh sign-in
// takes it up under that sign-in. A token's expiry pauses nothing: only a revocation does.
import type { ServiceContext } from '../context.js';
import { recordScheduleEvent } from './schedule-events.js';

/** Pauses the user's schedules whose authority is `jti` (null: every one, for a sign-out everywhere); their ids. */
export async function pauseRevokedSchedules(ctx: ServiceContext, userId: string, jti: string | null): Promise<string[]> {
  return ctx.store.transaction(async () => {
    let query = ctx.store.db
      .selectFrom('schedules')
      .select(['schedule_id', 'user_id', 'agent_id', 'node_id'])
      .where('user_id', '=', userId)
      .where('authorized_jti', 'is not', null)
      .where((eb) => eb.or([eb('paused', '=', 0), eb('pause_reason', 'in', ['insufficient_balance', 'budget_exceeded', 'failures'])]));
    if (jti !== null) query = query.where('authorized_jti', '=', jti);
    const found = await query.execute();
    const ids = found.map((row) => row.schedule_id);
    if (ids.length === 0) return ids;
    const now = ctx.clock.now();
    await ctx.store.db
      .updateTable('schedules')
      .set({ paused: 1, pause_reason: 'creator_revoked', next_fire_at: null, recheck_at: null, authorized_jti: null, updated_at: now })
      .where('schedule_id', 'in', ids)
      .execute();
    for (const row of found)
      await recordScheduleEvent(ctx.store, now, 'schedule.paused', {
        ...row,
        paused: true,
        pause_reason: 'creator_revoked',
        next_fire_at: null,
      });
    return ids;
  });
}
