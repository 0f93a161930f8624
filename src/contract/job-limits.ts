// The limits of a run as a job (docs/api.md "Runs as jobs"), as plain numbers: the CLI's light paths (help, the
// bundle checks) read them without loading the schemas of contract/jobs.ts.

/** The longest time limit an agent may declare (agent.json timeout_seconds): GitHub's 6 hours a job. */
export const MAX_RUN_SECONDS = 6 * 60 * 60;
/** An agent that declares none gets this, today's limit before time limits were the agent's. */
export const DEFAULT_RUN_SECONDS = 30;
/** How long a run may wait for a node when execute names no queue_seconds. */
export const DEFAULT_QUEUE_SECONDS = 10 * 60;
/** The longest a run may wait for a node (GitHub queues a job for 24 h). */
export const MAX_QUEUE_SECONDS = 24 * 60 * 60;
/** A retry-safe run is tried at most this often in all when its node is lost or restarts mid-run. */
export const MAX_RUN_ATTEMPTS = 3;

/** GET /v1/swarm/runs: a page holds at most this many runs (limit), 50 when not given. */
export const MAX_RUNS_PAGE = 200;
export const DEFAULT_RUNS_PAGE = 50;
