// What started a run (docs/api.md "Triggers"; docs/decisions/0034-what-started-a-run.md), as GitHub Actions names an
// event (push, schedule, workflow_dispatch): manual (a person's `swarm-node run`, the wizard's first run), schedule (a
// node's daemon, on an agent's --every), rerun (the console's "Run again"), api (any other execute: curl, a
// script, a client that does not say). It is shown, never used for money or authorization.
// Plain constants, apart from the schemas (as run-status.ts): the CLI's light paths read them.

export const RUN_TRIGGERS = ['manual', 'schedule', 'rerun', 'api'] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];

/**
 * The header by which our client says what started its execute. Only what the service cannot know itself is taken
 * from it: a console re-run is known server-side, and no header makes `rerun`; no header is `api`.
 */
export const RUN_TRIGGER_HEADER = 'svc-run-trigger';
export const CLAIMED_RUN_TRIGGERS = ['manual', 'schedule'] as const satisfies readonly RunTrigger[];
export type ClaimedRunTrigger = (typeof CLAIMED_RUN_TRIGGERS)[number];
