// Identifiers that sort by creation time (UUID version 7, RFC 9562): the first 48 bits are the Unix time in
// milliseconds, the rest random (74 bits). A table keyed by them, and every index on them, grows at its end: a run's
// row and its ledger and idempotency entries go into the pages the runs just before them dirtied, where a random
// UUID lands each one on a page of its own across indexes of a million runs (issue 17's 1M-run case).
import { randomFillSync } from 'node:crypto';

export function timeOrderedId(nowMs: number): string {
  const bytes = randomFillSync(Buffer.alloc(16));
  bytes.writeUIntBE(Math.max(0, Math.floor(nowMs)) % 2 ** 48, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
