// What the runs page's search box means (docs/api.md "Console"): one field that takes what a person has at hand, as
// Buildkite's and GitHub Actions' search does. A run id opens that run; a status word filters by it; anything else
// names an agent, by its id or by a word of its name ("review" finds Dev review the service), else as typed.
import { AGENT_SKUS } from '../../contract/agents.js';
import { RUN_STATUSES } from '../../contract/schemas.js';
import { UUID_PATTERN } from '../../contract/uuid.js';

export type RunSearch = { run_id: string } | { status: string } | { agent_id: string };

const RUN_ID = new RegExp(UUID_PATTERN);

export function runSearchOf(text: string): RunSearch {
  const query = text.trim();
  const lower = query.toLowerCase();
  if (RUN_ID.test(lower)) return { run_id: lower };
  if ((RUN_STATUSES as readonly string[]).includes(lower)) return { status: lower };
  const named = AGENT_SKUS.filter((sku) => sku.agent_id === lower || sku.name.toLowerCase().includes(lower));
  return { agent_id: named.length === 1 ? named[0]!.agent_id : query };
}
