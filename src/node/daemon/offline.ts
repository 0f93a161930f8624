// A clean stop, told (docs/api.md "The queue"): the service shows the node offline at once rather than a lease after
// its last poll, and routes nothing to it meanwhile; the node's next poll makes it online again.
import { messageOf } from '../../contract/errors.js';
import type { NodeCaller } from '../work/caller.js';
import type { DaemonLog } from './log.js';

export async function sayOffline(caller: NodeCaller | undefined, log: DaemonLog): Promise<void> {
  if (caller === undefined) return;
  try {
    await caller.executor.api.goingOffline();
    log.info('node_offline', { note: 'the service shows this node offline until it polls again' });
  } catch (error) {
    log.warn('node_offline_failed', { error: messageOf(error), note: 'the service shows the node offline a lease after its last poll' });
  }
}
