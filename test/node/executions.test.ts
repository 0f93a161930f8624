// The node's executions table on a real SQLite file: a closed execution drops its output at once and its row after
// the retention, and while it is remembered the same run id is known (never run twice).
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CLOSED_EXECUTION_RETENTION_MS,
  executionClosed,
  executionFinished,
  executionStarted,
  findExecution,
} from '../../src/node/store/executions.js';
import { openNodeStore } from '../../src/node/store/database.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';

afterAll(() => removeTempDirs());

const aRun = (runId: string) => ({
  run_id: runId,
  agent_id: 'agent_ops_monitor_004',
  user_id: 'u@example.com',
  lease_id: `lease-${runId}`,
  owner_pid: process.pid,
});

describe('executions', () => {
  it('a reported run keeps no output, is known for the retention, and is forgotten after it', () => {
    const db = openNodeStore(join(tempDir('executions-'), 'swarm-node.db'));
    const start = Date.UTC(2026, 10, 1);
    expect(executionStarted(db, aRun('r1'), start)).toBe(true);
    executionFinished(db, 'r1', { status: 'succeeded', output: { text: 'x'.repeat(100_000) } }, start + 1_000);
    executionClosed(db, 'r1', 'reported', start + 2_000);
    expect(findExecution(db, 'r1')).toMatchObject({ status: 'reported', result_status: 'succeeded', output_json: null });

    // Within the retention the run id is known: handed again, it is not started.
    expect(executionStarted(db, aRun('r1'), start + CLOSED_EXECUTION_RETENTION_MS - 1)).toBe(false);

    // Closing another run past the retention takes the old row away; a run still open is never taken.
    expect(executionStarted(db, aRun('r2'), start + 3_000)).toBe(true);
    expect(executionStarted(db, aRun('r3'), start + CLOSED_EXECUTION_RETENTION_MS)).toBe(true);
    executionFinished(db, 'r3', { status: 'failed', output: { error: 'exit' } }, start + CLOSED_EXECUTION_RETENTION_MS + 1_000);
    executionClosed(db, 'r3', 'lost', start + CLOSED_EXECUTION_RETENTION_MS + 2_001);
    expect(findExecution(db, 'r1')).toBeUndefined();
    expect(findExecution(db, 'r2')).toMatchObject({ status: 'running' });
    expect(findExecution(db, 'r3')).toMatchObject({ status: 'lost', output_json: null });
    db.close();
  });
});
