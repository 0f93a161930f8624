// What svc-api keeps of a long poll and of a run once they are over: nothing (docs/operations.md "bench:soak"). A soak
// found two things that grew with every run: an entry in the drain signal for each poll (AbortSignal.any, kept as long
// as the drain lives) and, on SQLite, the row of each run handed out, remembered for a finish that never read it.
import { getEventListeners } from 'node:events';
import { afterAll, describe, expect, it } from 'vitest';
import { createRuns } from '../../src/api/runs/runs.js';
import { dependantsOf } from '../helpers/abort-signal.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { TEST_RUN_TIMING, execute, paidUserWithNode, stopNodes } from './execute-fixtures.js';

describe('nothing kept of a poll or a run once it is over', () => {
  const service = useSvcApi({ runTiming: TEST_RUN_TIMING });
  afterAll(stopNodes);

  it('the drain signal holds nothing of the polls that ended, and no run is remembered once its result is in', async () => {
    const drain = service.ctx.drainSignal;
    const listeners = getEventListeners(drain, 'abort').length;
    const dependants = dependantsOf(drain);
    const user = await paidUserWithNode(service, 10_000);
    for (let run = 0; run < 10; run += 1) {
      const answered = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' });
      expect(answered.status, answered.text).toBe(200);
    }
    // Its last poll answered: every poll of the node has ended.
    await user.node.stop();
    expect(user.node.received.length).toBe(10);
    expect(getEventListeners(drain, 'abort').length).toBe(listeners);
    expect(dependantsOf(drain)).toBe(dependants);
    expect(createRuns(service.ctx).held?.size ?? 0).toBe(0);
  });
});
