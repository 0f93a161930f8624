// What svc-api keeps of a long poll and of a run once they are over: nothing (docs/operations.md "bench:soak"). A soak
// found two things that grew with every run: an entry in the drain signal for each poll (AbortSignal.any, kept as long
// as the drain lives) and, on SQLite, the row of each run handed out, remembered for a finish that never read it.
import { getEventListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuns } from '../../src/api/runs/runs.js';
import type { TestService } from '../helpers/svc-api.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs } from '../helpers/temp.js';
import { TEST_RUN_TIMING, execute, paidUserWithNode, stopNodes } from './execute-fixtures.js';

/** Node's own record of the signals AbortSignal.any() made from this one (lib/internal/abort_controller.js); 0 if none. */
function dependantsOf(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((symbol) => symbol.description === 'kDependantSignals');
  return key === undefined ? 0 : (((signal as unknown as Record<symbol, Set<unknown> | undefined>)[key])?.size ?? 0);
}

describe('nothing kept of a poll or a run once it is over', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startSvcApi({ runTiming: TEST_RUN_TIMING });
  });
  afterAll(async () => {
    await stopNodes();
    await service.close();
    removeTempDirs();
  });

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
