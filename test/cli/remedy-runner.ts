// Runs a remedy as a person types it: each swarm-node command in it, copied as printed into a fresh shell that has
// neither SWARM_NODE_HOME nor SVC_BASE_URL (what the command needs must be in what was printed), with `swarm-node`
// on the PATH (the built package) and `sudo` standing for itself (the tests run as root already). A command that
// asks something runs in a pseudo-terminal and is answered as a person would: the address it suggests, then the
// code from the mail.
import { chmodSync, existsSync, symlinkSync, writeFileSync } from 'node:fs';
import { execa } from 'execa';
import { join } from 'node:path';
import { commandsIn, commandTable, type CommandInText } from '../../src/cli/invocation.js';

import { buildProgram } from '../../src/cli/program.js';
import { runProgram, type CliResult } from '../helpers/cli.js';
import { nextMailTo, mailIdsTo, signInCodeOf } from '../helpers/mailbox.js';
import { spawnPty, stagedSwarmNodeBin, KEY, type PtySession } from '../helpers/pty.js';
import { tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

const COMMANDS = commandTable(buildProgram().commands[0]!);

let shims: { dir: string; bin: string } | undefined;

/**
 * A directory with `swarm-node` (a link to the built package, as install puts one on the PATH: the program then
 * names itself bare) and `sudo` (`env "$@"`: root already).
 */
function shimDir(): string {
  const bin = stagedSwarmNodeBin();
  // Made again when a suite's removeTempDirs() took it, or the package it runs, away.
  if (shims !== undefined && shims.bin === bin && existsSync(join(shims.dir, 'swarm-node'))) return shims.dir;
  const dir = tempDir('remedy-path-');
  symlinkSync(bin, join(dir, 'swarm-node'));
  writeFileSync(join(dir, 'sudo'), '#!/bin/sh\nexec env "$@"\n');
  chmodSync(join(dir, 'sudo'), 0o755);
  shims = { dir, bin };
  return dir;
}

/** A fresh shell's environment: no home, no service, agents run as this user (what a test node runs them as). */
function freshShell(): Record<string, string> {
  return {
    PATH: `${shimDir()}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: process.env.HOME ?? '/root',
    NO_COLOR: '1',
    SWARM_AGENT_ISOLATION: 'none',
  };
}

/** The swarm-node commands of a remedy, each as printed (its `sudo` and `NAME=value` words with it). */
export function printedCommands(remedy: string): CommandInText[] {
  return commandsIn(remedy, COMMANDS);
}

/** The remedy a failed run printed: the JSON error's, or the line after "error:" on stderr. */
export function remedyOf(result: CliResult): string {
  if (result.json?.error?.remedy !== undefined) return String(result.json.error.remedy);
  const lines = result.stderr.trimEnd().split('\n');
  const at = lines.findIndex((line) => line.startsWith('error: '));
  if (at < 0 || at + 1 >= lines.length) throw new Error(`no remedy printed:\n${result.stderr}`);
  return lines.slice(at + 1).join('\n');
}

/** The tests run as root: a command that would install onto, or remove from, this host itself is never run. */
function refuseThisHost(command: string): void {
  const [printed] = printedCommands(command);
  if (printed !== undefined && ['install', 'upgrade', 'uninstall'].includes(printed.args[0] ?? '') && !printed.args.includes('--root')) {
    throw new Error(`${command} would act on this host (no --root): not run`);
  }
}

/** Runs `command` (any shell command of a remedy) in a fresh shell, to its end. */
export function runAsPrinted(command: string, input?: string): Promise<CliResult> {
  refuseThisHost(command);
  return runProgram('/bin/sh', ['-c', command], {
    env: freshShell(),
    extendEnv: false,
    timeoutMs: 60_000,
    ...(input === undefined ? {} : { input }),
  });
}

/**
 * Runs `command` in a terminal and answers as a person: Enter at the address it suggests (or `email` typed when it
 * suggests none), the code mailed to `email` when it asks for one, and `confirm` (y/n) at a yes/no question.
 */
export async function runAsPrintedInTerminal(
  command: string,
  email: string,
  options: { confirm?: boolean } = {},
): Promise<{ exitCode: number; screen: string }> {
  refuseThisHost(command);
  const before = mailIdsTo(email);
  const session = spawnPty('/bin/sh', ['-c', command], freshShell());
  // Each question once: a prompt draws itself again as it is answered, and that is no new question.
  const questions = { email: /E-mail address you paid with:.*/, code: /Code from the mail to \S+:/, confirm: /\((?:y\/N|Y\/n)\)/ };
  const asked = new Set<keyof typeof questions>();
  try {
    for (;;) {
      const open = (Object.keys(questions) as (keyof typeof questions)[]).filter((kind) => !asked.has(kind));
      if (open.length === 0) break;
      const pattern = new RegExp(open.map((kind) => questions[kind].source).join('|'));
      const seen = await session.waitFor(pattern, 30_000).catch(() => '');
      if (seen === '') break;
      const kind = open.find((each) => questions[each].test(seen))!;
      asked.add(kind);
      if (kind === 'email') {
        if (seen.includes(`(${email})`)) session.press(KEY.enter);
        else await session.typeLine(email);
      } else if (kind === 'code') {
        const mail = await nextMailTo(email, { after: before });
        await session.typeLine(signInCodeOf(mail));
      } else {
        session.press(options.confirm === false ? 'n' : 'y', KEY.enter);
      }
    }
    const exit = await session.waitForExit(60_000);
    return { exitCode: exit.exitCode, screen: session.screen() };
  } finally {
    session.kill();
  }
}

/** Starts `command` as printed in a terminal of a fresh shell, for a test to answer as the person would. */
export function spawnAsPrintedInTerminal(command: string): PtySession {
  refuseThisHost(command);
  return spawnPty('/bin/sh', ['-c', command], freshShell());
}

/**
 * Runs a long-running command as printed (the daemon) until `ready` shows on its output (and `whileRunning`, given,
 * has settled), then stops it with SIGTERM, as a person at its terminal would with Ctrl+C or `kill`; returns all it
 * printed.
 */
export async function runAsPrintedUntil(command: string, ready: RegExp, whileRunning?: () => Promise<void>): Promise<string> {
  refuseThisHost(command);
  const child = execa('/bin/sh', ['-c', command], {
    env: freshShell(),
    extendEnv: false,
    detached: true,
    reject: false,
    all: true,
    stdin: 'ignore',
  });
  let output = '';
  child.all!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    await waitFor(async () => (ready.test(output) ? true : undefined), `${String(ready)} from ${command}`, 30_000).catch((error: Error) => {
      throw new Error(`${error.message}; it printed:\n${output}`);
    });
    await whileRunning?.();
  } finally {
    // The shell and the program it runs are one process group (detached): both get the signal.
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
    await child;
  }
  return output;
}
