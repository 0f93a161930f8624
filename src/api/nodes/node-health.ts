// A node's health (docs/api.md "Node health"): what its poll says of its host, checked beyond its schema (each
// field's type and range, and no other field, are the schema's: contract/node-protocol.ts NodeHealth), and as its
// user's fleet shows it, with the time the service received it.
import { SvcError } from '../../contract/errors.js';
import type { NodeHealth, NodeHealthReport } from '../../contract/node-protocol.js';
import { isoTime } from '../../lib/clock.js';

const REMEDY = 'Send health as the node measures it (docs/api.md "Node health"), or no health at all.';

/** What the schema cannot say: a part is never more than its whole, and the disk's two come together. */
export function assertHealthConsistent(health: NodeHealth | undefined): void {
  if (health === undefined) return;
  const refuse = (path: string, message: string): never => {
    throw new SvcError('invalid_request', `${path}: ${message}`, { remedy: REMEDY, extensions: { errors: [{ path, message }] } });
  };
  if (health.memory_available_bytes > health.memory_total_bytes)
    refuse('/health/memory_available_bytes', 'is more than memory_total_bytes');
  if ((health.disk_total_bytes === undefined) !== (health.disk_free_bytes === undefined))
    refuse(
      health.disk_total_bytes === undefined ? '/health/disk_total_bytes' : '/health/disk_free_bytes',
      'is required with the other disk field',
    );
  if (health.disk_free_bytes !== undefined && health.disk_free_bytes > health.disk_total_bytes!)
    refuse('/health/disk_free_bytes', 'is more than disk_total_bytes');
}

/** The stored health as the fleet shows it; null when the node never said it (or what is stored cannot be read). */
export function healthReport(healthJson: string | null, reportedAt: number | null): NodeHealthReport | null {
  if (healthJson === null || reportedAt === null) return null;
  try {
    return { ...(JSON.parse(healthJson) as NodeHealth), reported_at: isoTime(reportedAt) };
  } catch {
    return null;
  }
}
