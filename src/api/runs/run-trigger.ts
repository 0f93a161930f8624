// What started a run, as execute records it (docs/api.md "Triggers"; docs/decisions/0034-what-started-a-run.md). The
// service says what it knows itself (the console's re-run is its own route); our client says, in the Svc-Run-Trigger
// header, what only it knows: a person's `run` or its daemon's schedule, both sent with the same node credential. The
// header is read strictly, and a schedule only from a node credential, since only a node's daemon has schedules.
// Informational: nothing about money or access reads it.
import { SvcError } from '../../contract/errors.js';
import { CLAIMED_RUN_TRIGGERS, RUN_TRIGGER_HEADER, type ClaimedRunTrigger, type RunTrigger } from '../../contract/run-trigger.js';

export function executeTriggerOf(header: string | string[] | undefined, caller: 'user' | 'node'): RunTrigger {
  if (header === undefined) return 'api';
  const remedy = `Send ${RUN_TRIGGER_HEADER}: ${CLAIMED_RUN_TRIGGERS.join(' or ')} once, or leave it out (the run is then recorded as started by the API).`;
  if (typeof header !== 'string' || !(CLAIMED_RUN_TRIGGERS as readonly string[]).includes(header)) {
    const given = typeof header === 'string' ? JSON.stringify(header.slice(0, 32)) : 'more than once';
    throw new SvcError('invalid_request', `the ${RUN_TRIGGER_HEADER} header must be ${CLAIMED_RUN_TRIGGERS.join(' or ')}, not ${given}`, {
      remedy,
    });
  }
  const claimed = header as ClaimedRunTrigger;
  if (claimed === 'schedule' && caller !== 'node') {
    throw new SvcError('invalid_request', `${RUN_TRIGGER_HEADER}: schedule comes with a node credential only: schedules are a node's`, {
      remedy: `Send ${RUN_TRIGGER_HEADER}: manual with an access token, or leave it out.`,
    });
  }
  return claimed;
}
