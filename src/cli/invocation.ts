// What makes a command a person types act on the same node and service as the one that printed it (docs/api.md
// "The node's client: decisions", "Remedies"): where the node lives when it is not the host's own (SWARM_NODE_HOME,
// or --root for the commands that take it), its name (--node) and the service when a flag or the environment named
// it (--base-url). Every remedy and every "Next:" line is written as the bare command (`swarm-node login --email
// you@example.com`); this adds what is in force when it is shown, in one place, so no remedy has to remember it and
// a new one cannot forget it.
import type { Command } from 'commander';
import { join } from 'node:path';
import { INSTALL_PATH } from '../contract/claims.js';
import { installOfHome, NODES_DIR } from '../node/host/location.js';

/** The commands of the program and whether each takes --root (install, upgrade, uninstall, doctor). */
export type CommandTable = ReadonlyMap<string, { acceptsRoot: boolean }>;

/** The program's commands, from the tree `command` belongs to, and which of them take --root. */
export function commandTable(command: Command): CommandTable {
  let program = command;
  while (program.parent !== null) program = program.parent;
  return new Map(program.commands.map((each) => [each.name(), { acceptsRoot: each.options.some((option) => option.long === '--root') }]));
}

export interface InvocationInputs {
  commands: CommandTable;
  /**
   * The node in force: its home as this command resolved it (--root, --node, SWARM_NODE_HOME, the release it runs
   * from) and its name; read when a text is carried, undefined when it cannot be resolved.
   */
  node: () => { home: string; name: string | undefined } | undefined;
  /** The service in force when a flag or the environment named it (the config file is read by the typed command too). */
  baseUrl: string | undefined;
  /** How a `sudo` command names this program (program-word.ts); `swarm-node` when not given. */
  programForSudo?: () => string;
  /** How a command the person types names this program: what their PATH finds (program-word.ts); `swarm-node` when not given. */
  programOnPath?: () => string;
}

/** A command found in a text: where it starts and ends, and what it says. */
export interface CommandInText {
  start: number;
  end: number;
  text: string;
  /** `sudo ` when it has it, else ''. */
  sudo: string;
  /** `NAME=value ` words before the program, as written. */
  environment: string;
  /** `swarm-node`, or a path to a package's bin/swarm-node as a `sudo` command may name it (program-word.ts). */
  program: string;
  /** The words after the program. */
  args: string[];
}

/**
 * Each `swarm-node <command> …` in `text` (or a package's `…/bin/swarm-node <command>`), `sudo` included, up to
 * where the sentence takes over again: a comma, semicolon or parenthesis, a full stop that ends the sentence, a
 * line's end, two spaces (a column), a shell's redirection or pipe, or " then ", " or ", " and ", " to ".
 * Remedies are written so (test/cli/remedies.test.ts holds every one of them to it).
 */
export function commandsIn(text: string, commands: CommandTable): CommandInText[] {
  const found: CommandInText[] = [];
  const start =
    /(?<![\w/.-])(sudo )?((?:[A-Z][A-Z0-9_]*=\S+ )*)(swarm-node|\.{0,2}(?:\/[\w.@+-]+)*\/bin\/swarm-node(?:\.js)?) (?=(?:--[a-z-]+(?:[ =]\S+)? )*([a-z][a-z-]*))/g;
  for (let match = start.exec(text); match !== null; match = start.exec(text)) {
    if (!commands.has(match[4]!)) continue;
    const rest = text.slice(match.index);
    const stop = /[,;()\n]|\.(?=\s|$)| {2}| [<>|] | (?:then|or|and|to) /.exec(rest.slice(match[0].length));
    const length = stop === null ? rest.length : match[0].length + stop.index;
    const command = rest.slice(0, length).replace(/[\s.:]+$/, '');
    found.push({
      start: match.index,
      end: match.index + command.length,
      text: command,
      sudo: match[1] ?? '',
      environment: match[2] ?? '',
      program: match[3]!,
      args: command
        .slice(match[0].length)
        .split(/\s+/)
        .filter((word) => word !== ''),
    });
    start.lastIndex = match.index + command.length;
  }
  return found;
}

/** The global options that take a value: the word after them is not the command's name. */
const TAKES_VALUE = new Set(['--node', '--base-url']);

export class Invocation {
  readonly #commands: CommandTable;
  readonly #inputs: InvocationInputs;
  #resolved: Where | undefined;

  constructor(inputs: InvocationInputs) {
    this.#commands = inputs.commands;
    this.#inputs = inputs;
  }

  /** Where the typed command must act: the home (or install root) when it is not the host's own, and the options. */
  #where(): Where {
    if (this.#resolved !== undefined) return this.#resolved;
    const node = safely(this.#inputs.node);
    const name = node?.name;
    const onHost = node === undefined || node.home === join(INSTALL_PATH, ...(name === undefined ? [] : [NODES_DIR, name]));
    const install = onHost ? undefined : installOfHome(node.home);
    this.#resolved = {
      environment: onHost ? [] : [['SWARM_NODE_HOME', node.home]],
      root: install === undefined || install.onHost ? undefined : install.root,
      globals: [
        ...(name === undefined ? [] : ([['--node', name]] as [string, string][])),
        ...(this.#inputs.baseUrl === undefined ? [] : ([['--base-url', this.#inputs.baseUrl]] as [string, string][])),
      ],
    };
    return this.#resolved;
  }

  /** `text` with every swarm-node command in it carrying what is in force; the rest of the text as it was. */
  carry(text: string): string {
    let out = '';
    let at = 0;
    for (const command of commandsIn(text, this.#commands)) {
      out += text.slice(at, command.start) + this.#carryOne(command);
      at = command.end;
    }
    return out + text.slice(at);
  }

  #carryOne(command: CommandInText): string {
    const where = this.#where();
    const has = (option: string) => command.args.some((word) => word === option || word.startsWith(`${option}=`));
    const name = command.args.find((word, index) => /^[a-z]/.test(word) && !TAKES_VALUE.has(command.args[index - 1] ?? ''));
    const acceptsRoot = name !== undefined && this.#commands.get(name)?.acceptsRoot === true;
    // --root names an install for the commands that take it; the others reach its home through SWARM_NODE_HOME.
    const byRoot = acceptsRoot && where.root !== undefined;
    const environment = byRoot ? [] : where.environment.filter(([variable]) => !command.environment.includes(`${variable}=`));
    const globals = where.globals.filter(([option]) => !has(option));
    // After the command's own words, where commander reads the program's options too: the command reads as written.
    const root = byRoot && !has('--root') ? ['--root', quoted(where.root!)] : [];
    // A staging root is written as its owner, not as root (install --root is how a non-root user stages a node).
    const sudo = where.root !== undefined ? '' : command.sudo.trim();
    // sudo looks for the program on its own PATH, where this one may not be yet; the person's shell on theirs, where
    // a checkout's is not (program-word.ts).
    const named = sudo !== '' ? this.#inputs.programForSudo : this.#inputs.programOnPath;
    const program = command.program === 'swarm-node' ? (safely(named ?? (() => 'swarm-node')) ?? 'swarm-node') : command.program;
    return [
      sudo,
      command.environment.trim(),
      ...environment.map(([variable, value]) => `${variable}=${quoted(value)}`),
      quoted(program),
      ...command.args,
      ...root,
      ...globals.flatMap(([option, value]) => [option, quoted(value)]),
    ]
      .filter((word) => word !== '')
      .join(' ');
  }
}

interface Where {
  /** `NAME=value` words before `swarm-node`. */
  environment: [string, string][];
  /** The staging root of the install in force, for the commands that take --root. */
  root: string | undefined;
  /** Global options, after the command's own words. */
  globals: [string, string][];
}

function safely<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/** A value as a POSIX shell reads it back: bare when it is plain, else in single quotes. */
export function quoted(value: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}
