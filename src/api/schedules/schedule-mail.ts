// What a user is told of a schedule the service paused (docs/api.md "Schedules"): one mail a pause, sent in the
// background after the pause committed, as the other account mails are (mail/messages.ts).
import { isoTime } from '../../lib/clock.js';
import type { MailMessage } from '../mail/mail-message.js';

const WHY: Record<string, string> = {
  insufficient_balance: 'the wallet did not hold the price of a run; it resumes by itself once a run is covered',
  budget_exceeded: 'a budget of yours refused the run; it resumes by itself once the budget allows a run',
  creator_revoked: 'the sign-in that made or last resumed it was signed out; resume it after a fresh sign-in',
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
      'Resume one with: swarm-node schedule resume <id>',
    ].join('\n'),
  };
}
