import type { NodeHealth } from '../../src/contract/node-protocol.js';

/** A host's health as a daemon reports it on its polls: 38% of 8 GiB in use, 60 of 100 GiB free, up 3 d 2 h. */
export const SAMPLE_HEALTH: NodeHealth = {
  load_1: 0.52,
  load_5: 0.4,
  load_15: 0.31,
  memory_total_bytes: 8 * 1024 ** 3,
  memory_available_bytes: 5 * 1024 ** 3,
  disk_total_bytes: 100 * 1024 ** 3,
  disk_free_bytes: 60 * 1024 ** 3,
  uptime_seconds: 3 * 86_400 + 7_200,
};
