// `runs`: the local run journal, newest first, with totals over every run that matches.
import { isAgentId } from '../../contract/agents.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import { agentNotFound } from '../service/catalog.js';
import { runHistory, type RunRow, type RunTotals } from '../store/journal.js';

export function runsOf(db: SqliteDatabase, filter: { agentId?: string; limit: number }): { runs: RunRow[]; totals: RunTotals } {
  const history = runHistory(db, filter);
  // A mistyped id is an error, not an empty history; an agent gone from the catalog still shows the runs it had.
  if (filter.agentId !== undefined && !isAgentId(filter.agentId) && history.totals.runs === 0) throw agentNotFound(filter.agentId);
  return history;
}
