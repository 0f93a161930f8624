// svc-api under the fuzz bench (./fuzz.ts), as a process of its own: started with short body timers, its log (JSON
// lines on stderr, src/api/main.ts) read for error-level lines, each tied to the case whose X-Request-Id it names,
// its exits recorded with what it printed and the cases last logged, and started again on the same data (same
// SQLite file or PostgreSQL database) so the run goes on. Its open file descriptors and resident set from /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface ErrorLine {
  /** The case, when the line names a request of the bench (X-Request-Id fuzz-<index>). */
  index: number | undefined;
  msg: string;
  err: string | undefined;
}

export interface ExitRecord {
  code: number | null;
  signal: string | null;
  /** The first line of what it printed that was not a log line (an uncaught error's name and message). */
  crash: string;
  /** The cases named by its last log lines before it exited, newest first, and what the last one said. */
  lastLogged: number[];
  lastMessage: string;
  /** The cases begun in the seconds before it exited (an exit may follow its case by the body timer), newest first. */
  recent: { index: number; kind: string }[];
}

const FUZZ_ID = /^fuzz-(\d+)$/;

export class FuzzedService {
  origin = '';
  port = 0;
  pid = 0;
  /** Bumped at each start: an outcome of a case begun under another generation is lost to an exit, not judged. */
  generation = 0;
  up: Promise<void> = Promise.resolve();
  readonly errors: ErrorLine[] = [];
  readonly exits: ExitRecord[] = [];
  warnings = 0;
  /** Lines that were neither JSON nor the ready line, the first few kept. */
  readonly otherLines: string[] = [];
  otherLineCount = 0;
  #started: { index: number; kind: string; at: number }[] = [];
  #child: ChildProcess | undefined;
  #stopping = false;
  #recent: number[] = [];
  #crash: string[] = [];
  #lastMessage = '';

  constructor(
    private readonly bin: string,
    private readonly args: string[],
    /** The whole environment of the process (nothing of the bench's own is passed on unless it is here). */
    private readonly env: NodeJS.ProcessEnv,
    /** How far back an exit's recent cases go. */
    private readonly recentMs: number,
  ) {}

  /** A case begins: remembered a while, as a suspect of an exit that follows. */
  started(index: number, kind: string): void {
    this.#started.push({ index, kind, at: Date.now() });
    if (this.#started.length > 2000) this.#started.splice(0, 1000);
  }

  start(): Promise<void> {
    this.up = this.#spawn();
    return this.up;
  }

  #spawn(): Promise<void> {
    const child = spawn(process.execPath, [this.bin, ...this.args], { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    this.#crash = [];
    let buffered = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) this.#read(line);
    });
    child.once('exit', (code, signal) => {
      if (buffered !== '') this.#read(buffered);
      if (this.#stopping) return;
      this.exits.push({
        code,
        signal,
        crash:
          this.#crash.find((line) => /^[A-Z]\w*(Error|Exception)\b/.test(line)) ??
          this.#crash.find((line) => /Error\b/.test(line)) ??
          this.#crash[0] ??
          '',
        lastLogged: [...new Set(this.#recent.slice(-16).reverse())].slice(0, 6),
        lastMessage: this.#lastMessage,
        recent: this.#started
          .filter((each) => each.at >= Date.now() - this.recentMs)
          .reverse()
          .map(({ index, kind }) => ({ index, kind })),
      });
      process.stderr.write(`fuzz: svc-api exited (${signal ?? code}); starting it again\n`);
      this.up = this.#spawn();
    });
    return new Promise((resolve, reject) => {
      let seen = '';
      let ready = false;
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        seen += chunk;
        const match = /svc-api listening on (\S+)/.exec(seen);
        if (match !== null && !ready) {
          ready = true;
          this.origin = match[1]!;
          this.port = Number(new URL(this.origin).port);
          this.pid = child.pid!;
          this.generation += 1;
          resolve();
        }
      });
      child.once('exit', (code) => {
        if (this.#stopping) resolve();
        else reject(new Error(`svc-api exited with ${code} before it was ready: ${this.#crash.slice(0, 5).join(' | ')}`));
      });
    });
  }

  #read(line: string): void {
    if (line.trim() === '') return;
    let entry: { level?: number; request_id?: string; msg?: string; err?: { type?: string; message?: string } } | undefined;
    if (line.startsWith('{')) {
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        entry = undefined;
      }
    }
    if (entry === undefined || typeof entry.level !== 'number') {
      this.#crash.push(line);
      this.otherLineCount += 1;
      if (this.otherLines.length < 20) this.otherLines.push(line.slice(0, 300));
      return;
    }
    const index = FUZZ_ID.exec(entry.request_id ?? '')?.[1];
    if (index !== undefined) {
      this.#lastMessage = entry.msg ?? '';
      this.#recent.push(Number(index));
      if (this.#recent.length > 64) this.#recent.splice(0, 32);
    }
    // pino's levels: 40 warn, 50 error, 60 fatal.
    if (entry.level >= 50) {
      const err = entry.err === undefined ? undefined : `${entry.err.type ?? 'Error'}: ${entry.err.message ?? ''}`.slice(0, 300);
      this.errors.push({ index: index === undefined ? undefined : Number(index), msg: entry.msg ?? '', err });
    } else if (entry.level >= 40) {
      this.warnings += 1;
    }
  }

  /** Open file descriptors and resident set (MB) of the process now. */
  resources(): { fds: number; rssMb: number } {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const rss = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
    // A process that has exited (a zombie) has no VmRSS.
    if (rss === undefined) throw new Error(`svc-api (pid ${this.pid}) is not running`);
    return { fds: readdirSync(`/proc/${this.pid}/fd`).length, rssMb: Number(rss) / 1024 };
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    const child = this.#child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const forced = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited.finally(() => clearTimeout(forced));
  }
}
