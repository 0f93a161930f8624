// Identifiers that sort by creation time (UUID version 7, RFC 9562): the first 48 bits are the Unix time in
// milliseconds, the rest random (74 bits). A table keyed by them, and every index on them, grows at its end: a run's
// row and its ledger and idempotency entries go into the pages the runs just before them dirtied, where a random
// UUID lands each one on a page of its own across indexes of a million runs.
// Within one millisecond of this process they still sort in the order they were made (RFC 9562 §6.2, method 1: the
// 12 bits after the version are a counter, seeded at random below half its range each new millisecond), so two
// events one transaction records at once (an audit's activation and its deploy token) list in that order.
import { randomFillSync, randomInt } from 'node:crypto';

let lastMs = -1;
let counter = 0;

export function timeOrderedId(nowMs: number): string {
  const ms = Math.max(0, Math.floor(nowMs)) % 2 ** 48;
  if (ms === lastMs && counter < 0xfff) {
    counter += 1;
  } else {
    lastMs = ms;
    counter = randomInt(0, 0x800);
  }
  const bytes = randomFillSync(Buffer.alloc(16));
  bytes.writeUIntBE(ms, 0, 6);
  bytes[6] = 0x70 | (counter >> 8);
  bytes[7] = counter & 0xff;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
