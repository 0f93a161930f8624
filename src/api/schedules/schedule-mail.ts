// What a user is told of a schedule the service paused (docs/api.md "Schedules"): one mail a pause, sent in the
// background after the pause committed, as the other account mails are (mail/messages.ts).
import { isoTime } from '../../lib/clock.js';
import type { MailMessage } from '../mail/mail-message.js';
import { runInBackground, type ServiceContext } from '../context.js';

const WHY: Record<string, string> = {
  insufficient_balance: 'the wallet did not hold the price of a run; it resumes by itself once a run is covered',
  budget_exceeded: 'a budget of yours refused the run; it resumes by itself once the budget allows a run',
  creator_revoked: 'the sign-in that made or last resumed it was signed out; resume it after a fresh sign-in',
  node_removed:
    'the node it is pinned to was removed, and it is never rerouted; remove it (swarm-node schedule rm <id>) and add it again for another node or labels',
};

export function schedulesPausedMail(to: string, scheduleIds: readonly string[], reason: string, at: number): MailMessage {
  return {
    to,
    subject:
      scheduleIds.length === 1
        ? 'A schedule of your svc account was paused'
        : `${scheduleIds.length} schedules of your svc account were paused`,
    text: [
      `Paused at ${isoTime(at)} (${reason}): ${WHY[reason] ?? reason}.`,
      '',
      ...scheduleIds.map((id) => `  ${id}: swarm-node schedule show ${id}`),
      '',
      reason === 'node_removed' ? 'Your nodes: swarm-node nodes' : 'Resume one with: swarm-node schedule resume <id>',
    ].join('\n'),
  };
}

/** Mails the user, after the pause committed and in the background, of the schedules a removal of their node paused. */
export function mailNodeRemovalPauses(ctx: ServiceContext): (userId: string, scheduleIds: string[], at: number) => void {
  return (userId, scheduleIds, at) => runInBackground(ctx, ctx.mailer.send(schedulesPausedMail(userId, scheduleIds, 'node_removed', at)));
}
