// Schema version 20: a node's health and its drain (docs/api.md "Node health", "Draining a node";
// docs/decisions/0035-node-health-and-drain.md). The health is kept as the poll's validated object, one JSON text
// written with the node's heartbeat, with the time the service received it: it is shown, never queried by field.
// drained_at is the user's drain, kept at the service so that it outlives the node's daemon and host.
import type { Kysely } from 'kysely';

export async function nodeHealthAndDrain(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('nodes').addColumn('health_json', 'text').execute();
  await db.schema.alterTable('nodes').addColumn('health_reported_at', 'bigint').execute();
  await db.schema.alterTable('nodes').addColumn('drained_at', 'bigint').execute();
}
