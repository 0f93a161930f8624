// Drives the built swarm-node in a real pseudo-terminal (node-pty), as a person at a keyboard would: wait for a
// prompt's text on the screen, then press keys. Screen text is read with ANSI sequences stripped.
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { spawn, type IPty } from '@lydell/node-pty';
import { stagedOnPath, stagedPackage } from '../install/support.js';

export const KEY = {
  enter: '\r',
  up: '\u001b[A',
  down: '\u001b[B',
  ctrlC: '\u0003',
  backspace: '\u007f',
} as const;

export interface PtyExit {
  exitCode: number;
  signal: number | undefined;
}

export interface PtySession {
  /** Everything shown so far, ANSI stripped. */
  screen(): string;
  /** Everything written to the terminal so far, escape sequences included. */
  raw(): string;
  /** Waits until `text` appears after what earlier waits consumed; returns the screen from there up to the match. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<string>;
  /** Sends keys as typed (KEY.* for the special ones). */
  press(...keys: string[]): void;
  /** Types a line character by character, then Enter. */
  typeLine(text: string): Promise<void>;
  readonly exited: Promise<PtyExit>;
  /** Waits for the exit; fails with the screen when it takes longer. */
  waitForExit(timeoutMs?: number): Promise<PtyExit>;
  kill(): void;
}

export interface PtyOptions {
  /**
   * The width the terminal reports, set with stty before swarm-node starts: node-pty takes 0 for "the default",
   * while serial consoles and `script` do report 0 columns.
   */
  columns?: number;
}

/**
 * `node bin/swarm-node.js <args>` of the built package (staged once per test file, so a rebuild of dist/ by someone
 * else mid-test cannot pull it away), with the environment of a fresh shell plus `env`.
 */
export function spawnSwarmNodePty(args: string[], env: Record<string, string>, options: PtyOptions = {}): PtySession {
  const bin = stagedSwarmNodeBin();
  // The staged package on the PATH, as installed: what it prints names it bare (src/lib/program-word.ts).
  env = { PATH: `${stagedOnPath()}:${process.env.PATH ?? '/usr/bin:/bin'}`, ...env };
  return options.columns === undefined
    ? spawnPty(process.execPath, [bin, ...args], env)
    : spawnPty(
        '/bin/sh',
        ['-c', 'stty cols "$1" && shift && exec "$@"', 'sh', String(options.columns), process.execPath, bin, ...args],
        env,
      );
}

/** bin/swarm-node.js of the built package, staged once per test file. */
export function stagedSwarmNodeBin(): string {
  return join(stagedPackage(), 'bin', 'swarm-node.js');
}

/** Any program in a pty (a shell that pipes swarm-node's stdout, say), with a fresh shell's environment plus `env`. */
export function spawnPty(file: string, argv: string[], env: Record<string, string>): PtySession {
  const child: IPty = spawn(file, argv, {
    name: 'xterm-256color',
    // Wide, so no line of ours wraps and a waited-for text stays in one piece.
    cols: 200,
    rows: 50,
    cwd: process.cwd(),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', TERM: 'xterm-256color', LANG: 'C.UTF-8', ...env },
  });
  let raw = '';
  let consumed = 0;
  let exit: PtyExit | undefined;
  const listeners = new Set<() => void>();
  const notify = (): void => listeners.forEach((listener) => listener());
  child.onData((data) => {
    raw += data;
    notify();
  });
  const exited = new Promise<PtyExit>((resolve) => {
    child.onExit(({ exitCode, signal }) => {
      exit = { exitCode, signal: signal === 0 ? undefined : signal };
      // node-pty may report the exit before the last output is read: let it arrive.
      setTimeout(() => {
        notify();
        resolve(exit!);
      }, 50);
    });
  });
  const screen = (): string => stripVTControlCharacters(raw).replace(/\r/g, '');

  const tail = (from: number): string => {
    const text = screen().slice(from);
    return text.length > 3000 ? `…${text.slice(-3000)}` : text;
  };

  return {
    screen,
    raw: () => raw,
    exited,
    waitFor(text, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const started = consumed;
        const check = (): boolean => {
          const current = screen();
          const rest = current.slice(consumed);
          const match = typeof text === 'string' ? { index: rest.indexOf(text), length: text.length } : regexMatch(rest, text);
          if (match.index >= 0) {
            const end = consumed + match.index + match.length;
            const seen = current.slice(consumed, end);
            consumed = end;
            done();
            resolve(seen);
            return true;
          }
          if (exit !== undefined) {
            done();
            reject(
              new Error(
                `swarm-node exited ${exit.exitCode} before showing ${String(text)}; the screen since the last step:\n${tail(started)}`,
              ),
            );
            return true;
          }
          return false;
        };
        const timer = setTimeout(() => {
          done();
          reject(
            new Error(`timed out after ${timeoutMs} ms waiting for ${String(text)}; the screen since the last step:\n${tail(started)}`),
          );
        }, timeoutMs);
        const listener = (): void => void check();
        const done = (): void => {
          clearTimeout(timer);
          listeners.delete(listener);
        };
        listeners.add(listener);
        check();
      });
    },
    press(...keys) {
      for (const key of keys) child.write(key);
    },
    async typeLine(text) {
      for (const character of text) {
        child.write(character);
        // A person types a key at a time; the prompt re-renders between keys.
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      child.write(KEY.enter);
    },
    async waitForExit(timeoutMs = 15_000) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`swarm-node did not exit within ${timeoutMs} ms; the screen:\n${tail(0)}`)), timeoutMs);
      });
      try {
        return await Promise.race([exited, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    kill() {
      if (exit === undefined) child.kill('SIGKILL');
    },
  };
}

function regexMatch(text: string, pattern: RegExp): { index: number; length: number } {
  const match = pattern.exec(text);
  return match === null ? { index: -1, length: 0 } : { index: match.index, length: match[0].length };
}
