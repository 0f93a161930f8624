// Whether the daemon can write its journal (docs/operations.md "A full var/"). Every run is journaled before it
// starts and its result before it is reported, so a node that cannot write takes no run: it would drop each at once
// and leave it to wait out its lease. A failed write of the journal (a full disk, an I/O error, a read-only or
// vanished file) stops the taking of work and says why, once, in the log, the health endpoint and `status` (through
// the fault file, store/journal-fault.ts); the next write that works (the tick's, every second) resumes it.
import { messageOf } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';
import { prepareJournalFaultFile, recordJournalFault, type JournalFault } from '../store/journal-fault.js';
import type { DaemonLog } from './log.js';

/** SQLite's codes (better-sqlite3's SqliteError.code) and the system's (a file of var/) that mean the journal cannot be written. */
const FULL = new Set(['SQLITE_FULL', 'ENOSPC', 'EDQUOT']);
const UNWRITABLE = /^SQLITE_(IOERR|READONLY|CANTOPEN|CORRUPT|NOTADB)|^(EIO|EROFS|EACCES|EPERM)$/;

/** Why a write failed, when it is the journal that cannot be written; undefined for any other error. */
export function journalFaultOf(error: unknown): JournalFault['reason'] | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  if (FULL.has(code)) return 'disk_full';
  return UNWRITABLE.test(code) ? 'write_failed' : undefined;
}

export class JournalHealth {
  readonly #log: DaemonLog;
  readonly #clock: Clock;
  readonly #pid: number;
  /** Where the fault file is (var/); none: only the log and the health endpoint say it. */
  readonly #varDir: string | undefined;
  /** Told of each change: the fault, or undefined once the journal is writable again. */
  readonly #onChanged: (fault: JournalFault | undefined) => void;
  #fault: JournalFault | undefined;

  constructor(deps: {
    log: DaemonLog;
    clock: Clock;
    pid: number;
    varDir?: string | undefined;
    onChanged: (fault: JournalFault | undefined) => void;
  }) {
    this.#log = deps.log;
    this.#clock = deps.clock;
    this.#pid = deps.pid;
    this.#varDir = deps.varDir;
    this.#onChanged = deps.onChanged;
  }

  get writable(): boolean {
    return this.#fault === undefined;
  }

  /** What is wrong, while it is. */
  get fault(): JournalFault | undefined {
    return this.#fault;
  }

  /** Room for the fault, taken while writes work (the daemon's start): a full disk later only loses that. */
  prepare(): void {
    if (this.#varDir === undefined) return;
    try {
      prepareJournalFaultFile(this.#varDir);
    } catch (error) {
      this.#log.warn('journal_fault_file', { error: messageOf(error), note: 'status cannot say why if the journal becomes unwritable' });
    }
  }

  /** A write failed: true when it is the journal that cannot be written (work stops being taken; said once). */
  failed(error: unknown): boolean {
    const reason = journalFaultOf(error);
    if (reason === undefined) return false;
    if (this.#fault !== undefined) return true;
    this.#fault = { pid: this.#pid, reason, error: messageOf(error), since: new Date(this.#clock.now()).toISOString() };
    this.#log.error('journal_unwritable', {
      reason,
      error: this.#fault.error,
      note: 'no run is taken until the journal can be written again; runs in flight go on',
      ...(this.#varDir === undefined
        ? {}
        : { remedy: `free space under ${this.#varDir} (or fix its filesystem); the daemon resumes by itself` }),
    });
    this.#recordFault();
    this.#onChanged(this.#fault);
    return true;
  }

  /** A write of the journal worked: work is taken again. */
  wrote(): void {
    const fault = this.#fault;
    if (fault === undefined) return;
    this.#fault = undefined;
    this.#log.info('journal_writable', {
      after: fault.reason,
      unwritable_seconds: Math.round((this.#clock.now() - Date.parse(fault.since)) / 1000),
    });
    this.#recordFault();
    this.#onChanged(undefined);
  }

  #recordFault(): void {
    if (this.#varDir === undefined) return;
    try {
      recordJournalFault(this.#varDir, this.#fault ?? null);
    } catch {
      // Best effort: the log line above and the health endpoint say it anyway.
    }
  }
}
