// The one fact the daemon cannot keep in its journal: that it cannot write it (its disk is full, the database fails
// to write). Kept in a small file under var/, allocated when the daemon starts (writes work then) and overwritten
// in place afterwards, which needs no free block: `status` reads why the daemon takes no runs even on a full disk.
// Best effort: a filesystem that copies on write (btrfs) may refuse even that, and the log and health endpoint
// still say it.
import { closeSync, fsyncSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export interface JournalFault {
  /** The daemon that cannot write: a fault of a process gone says nothing. */
  pid: number;
  /** disk_full: the filesystem has no room (SQLITE_FULL, ENOSPC, EDQUOT); write_failed: any other failed write. */
  reason: 'disk_full' | 'write_failed';
  error: string;
  since: string;
}

const FILE = 'journal-fault.json';
/** Room for the fault's JSON; the rest is spaces, so a shorter fault overwrites a longer one whole. */
const SIZE = 1024;

function faultFile(varDir: string): string {
  return join(varDir, FILE);
}

/** Allocates the file while writes work (the daemon's start), empty (no fault). */
export function prepareJournalFaultFile(varDir: string): void {
  writeFileSync(faultFile(varDir), `${' '.repeat(SIZE - 1)}\n`, { mode: 0o600 });
  const fd = openSync(faultFile(varDir), 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Overwrites the allocated bytes in place with the fault, or with nothing once the journal is writable again. */
export function recordJournalFault(varDir: string, fault: JournalFault | null): void {
  const text = fault === null ? '' : JSON.stringify({ ...fault, error: fault.error.slice(0, 400) });
  const fd = openSync(faultFile(varDir), 'r+');
  try {
    writeSync(fd, text.padEnd(SIZE - 1, ' ') + '\n', 0, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** The fault recorded, if any (none: no file, an empty one, or one that does not parse). */
export function readJournalFault(varDir: string): JournalFault | undefined {
  try {
    const text = readFileSync(faultFile(varDir), 'utf8').trim();
    if (text === '') return undefined;
    const fault = JSON.parse(text) as Partial<JournalFault>;
    return typeof fault.pid === 'number' &&
      typeof fault.error === 'string' &&
      typeof fault.since === 'string' &&
      (fault.reason === 'disk_full' || fault.reason === 'write_failed')
      ? (fault as JournalFault)
      : undefined;
  } catch {
    return undefined;
  }
}
