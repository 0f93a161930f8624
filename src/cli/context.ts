// What a command's action is given, and the one place that builds it: its output, where the node lives, the
// configuration in force, the service client and the local store. Each is made on first use; heavy modules
// (undici, better-sqlite3) load only then, so commands that don't need them, and --help, start fast
// (docs/architecture.md "Build"). The context also owns what a command may ask of the process: the signals, and an
// exit that does not wait for calls still in flight; main.ts does the rest.
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { SvcError } from '../contract/errors.js';
import { systemClock, type Clock } from '../lib/clock.js';
import type { SqliteDatabase } from '../lib/sqlite.js';
import { readConfigFile, resolveConfig, type ResolvedConfig } from '../node/host/config.js';
import { readCredentials, type Credentials, type NodeEnrollment, type StoredJwt } from '../node/identity/credentials.js';
import { loginCommandFor } from '../node/identity/sign-in-remedy.js';
import {
  checkNodeName,
  homePaths,
  installOfHome,
  installTarget,
  type InstallLayout,
  type LocationInputs,
  type NodePaths,
} from '../node/host/location.js';
import type { ThisNode } from '../node/agents/registrations.js';
import type { RunCaller } from '../node/runs/run-agent.js';
import type { ServiceClient } from '../node/service/service-client.js';
import type { NodeCaller } from '../node/work/caller.js';
import { commandTable, Invocation, type CommandTable } from './invocation.js';
import { programWord, programWordForSudo, searchPath } from '../lib/program-word.js';
import { Output } from './output.js';
import { VERSION } from './version.js';

export interface GlobalOptions {
  json?: boolean;
  color?: boolean;
  baseUrl?: string;
  /** --node: a named node of this host (install --name), else SWARM_NODE_NAME. */
  node?: string;
}

/**
 * What a command acts on. 'command': the node's home. 'install': the install under --root (or the one this program
 * runs from, or the host), its own config file included: --root may point elsewhere than the home. 'daemon': the
 * home, for months, under its own User-Agent and with the store's smaller page cache.
 */
export type ContextKind = 'command' | 'install' | 'daemon';

export class CommandContext {
  readonly output: Output;
  readonly env: NodeJS.ProcessEnv;
  readonly clock: Clock = systemClock;
  readonly version = VERSION;
  readonly #kind: ContextKind;
  readonly #flags: GlobalOptions;
  readonly #location: LocationInputs;
  #paths: NodePaths | undefined;
  #layout: InstallLayout | undefined;
  #config: ResolvedConfig | undefined;
  #client: ServiceClient | undefined;
  #store: SqliteDatabase | undefined;
  /** Listeners this context put on the process, taken off at close. */
  readonly #releases: (() => void)[] = [];
  #leaveCallsInFlight = false;
  /** What Ctrl+C leaves behind that a person must know of (a run still billed, a session to resume). */
  #interruptReport: (() => SvcError | undefined) | undefined;
  /** What a command printed here needs to act on the same node and service when typed (invocation.ts). */
  readonly invocation: Invocation;

  constructor(
    kind: ContextKind,
    flags: GlobalOptions & { root?: string },
    env: NodeJS.ProcessEnv = process.env,
    entryScript: string | undefined = process.argv[1],
    commands: CommandTable = new Map(),
  ) {
    this.#kind = kind;
    this.#flags = flags;
    this.env = env;
    const baseUrl = flags.baseUrl ?? (env.SVC_BASE_URL === undefined || env.SVC_BASE_URL.trim() === '' ? undefined : env.SVC_BASE_URL);
    this.invocation = new Invocation({
      commands,
      baseUrl,
      node: () => ({ home: this.paths.home, name: this.paths.name }),
      programForSudo: () => programWordForSudo(entryScript, process.cwd()),
      programOnPath: () => programWord('swarm-node', entryScript, process.cwd(), searchPath(env.PATH)),
    });
    this.output = new Output({
      json: flags.json === true,
      color: flags.color !== false,
      env,
      carry: (text) => this.invocation.carry(text),
    });
    this.#location = { root: flags.root, env, entryScript, nodeName: nodeNameOf(flags.node, env) };
  }

  get json(): boolean {
    return this.output.json;
  }

  /** The node's files: the home's, or under the 'install' kind the install's. */
  get paths(): NodePaths {
    this.#paths ??= this.#kind === 'install' ? this.layout() : homePaths(this.#location);
    return this.#paths;
  }

  /** The install the install commands act on (--root, else the one this program runs from, else the host). */
  layout(): InstallLayout {
    this.#layout ??= installTarget(this.#location);
    return this.#layout;
  }

  /** flags > environment > the config file of `paths` > defaults. */
  config(): ResolvedConfig {
    this.#config ??= resolveConfig({
      flags: { base_url: this.#flags.baseUrl },
      env: this.env,
      file: readConfigFile(this.paths.configFile),
    });
    return this.#config;
  }

  async client(): Promise<ServiceClient> {
    if (this.#client === undefined) {
      const { ServiceClient } = await import('../node/service/service-client.js');
      const config = this.config();
      const deadlineMs = config.timeout_seconds * 1000;
      // The daemon keeps undici's connection pool for months of polls; a command sends a request or two over Node's
      // http and exits without loading it (src/node/service/http/transport.ts).
      const daemon =
        this.#kind === 'daemon'
          ? {
              userAgent: `swarm-node-daemon/${this.version}`,
              transport: new (await import('../node/service/http/undici-transport.js')).UndiciTransport({
                connectTimeoutMs: ServiceClient.connectTimeoutMs(deadlineMs),
              }),
            }
          : {};
      this.#client = new ServiceClient({ baseUrl: config.base_url, deadlineMs, ...daemon });
    }
    return this.#client;
  }

  async store(): Promise<SqliteDatabase> {
    if (this.#store === undefined) {
      const { openNodeStore } = await import('../node/store/database.js');
      this.#store = openNodeStore(this.paths.databaseFile, this.#kind === 'daemon' ? 'daemon' : 'command');
    }
    return this.#store;
  }

  credentials(): Credentials {
    return readCredentials(this.paths.credentialsFile);
  }

  /** The stored JWT, when there is one that has not expired by the local clock. */
  requireJwt(): StoredJwt {
    const { jwt, node } = this.credentials();
    if (jwt === undefined) {
      throw new SvcError('not_signed_in', 'this node is not signed in', { remedy: `Sign in first: ${loginCommandFor(node?.user_id)}` });
    }
    if (jwt.exp * 1000 <= this.clock.now()) {
      throw new SvcError('token_expired', `the stored access token expired on ${new Date(jwt.exp * 1000).toISOString()}`, {
        remedy: `Sign in again: ${loginCommandFor(jwt.sub)}`,
      });
    }
    return jwt;
  }

  /** This host as an enrolled node, with its side of the protocol; undefined when it is not one. */
  async thisNode(): Promise<ThisNode | undefined> {
    const node = this.credentials().node;
    if (node?.credential === undefined) return undefined;
    const { NodeApi } = await import('../node/service/node-api.js');
    return { node_id: node.node_id, user_id: node.user_id, api: new NodeApi(await this.client(), node.credential) };
  }

  async requireNode(): Promise<ThisNode> {
    const node = await this.thisNode();
    if (node === undefined) {
      throw new SvcError('not_enrolled', `this host is not an enrolled node (no node credential in ${this.paths.credentialsFile})`, {
        remedy: `Enroll it, signed in (it asks the service for the deploy token): ${this.enrollCommand()}`,
      });
    }
    return node;
  }

  /** How this home enrolls: an installed node through install (which owns its files and unit), any other by enroll. */
  enrollCommand(): string {
    return this.#kind === 'install' || (existsSync(this.paths.currentLink) && installOfHome(this.paths.home) !== undefined)
      ? 'sudo swarm-node install'
      : 'swarm-node enroll';
  }

  /**
   * Who asks for runs from here: this node with its own credential when it is enrolled (the run executes on this
   * host), else the signed-in user with the JWT (the run goes to one of the user's nodes).
   */
  /** Builds this node as it asks for and runs work, from its enrollment; the daemon rebuilds it on rotation. */
  async nodeCallerFactory(): Promise<(node: NodeEnrollment & { credential: string }) => NodeCaller> {
    const { nodeCaller } = await import('../node/work/caller.js');
    const pieces = {
      client: await this.client(),
      db: await this.store(),
      clock: this.clock,
      pid: process.pid,
      version: this.version,
      paths: this.paths,
    };
    const { agent_isolation: isolation, agent_socket: agentSocket, agent_syscall_filter: syscallFilter } = this.config();
    return (node) => nodeCaller({ ...pieces, node, isolation, agentSocket, syscallFilter });
  }

  async runCaller(): Promise<RunCaller> {
    const node = this.credentials().node;
    if (node?.credential !== undefined) return (await this.nodeCallerFactory())({ ...node, credential: node.credential });
    if (this.credentials().jwt === undefined) {
      throw new SvcError('not_signed_in', 'this host is not an enrolled node, and not signed in', {
        remedy:
          'Enroll it to run agents here (swarm-node install, or swarm-node enroll), or sign in (swarm-node login) to run them on your other nodes.',
      });
    }
    const jwt = this.requireJwt();
    return { kind: 'user', bearer: jwt.token, user_id: jwt.sub };
  }

  /** Whether a person can answer a prompt: stdin is a terminal and --json was not asked for. */
  canPrompt(): boolean {
    return Boolean(process.stdin.isTTY) && !this.json;
  }

  /**
   * Aborted at Ctrl+C, so a wait with no prompt to catch it ends at once; the program still exits 130 through
   * main.ts.
   */
  interruption(): AbortSignal {
    const interrupted = new AbortController();
    this.#listen(['SIGINT'], () => interrupted.abort());
    return interrupted.signal;
  }

  /**
   * At Ctrl+C, main.ts prints the error `report` gives (when it gives one) before it exits 130: what the command
   * leaves behind at the service (its id, its cost) and the commands that cancel or resume it.
   */
  onInterrupt(report: () => SvcError | undefined): void {
    this.#interruptReport = report;
  }

  interruptReport(): SvcError | undefined {
    return this.#interruptReport?.();
  }

  /**
   * The command owns SIGINT and SIGTERM: both abort the returned signal (its reason is the signal's name) and
   * main.ts's Ctrl+C handling stands aside, so the command decides how it stops and with which exit code.
   */
  stopSignal(): AbortSignal {
    const stop = new AbortController();
    const onSignal = (signal: NodeJS.Signals): void => {
      if (!stop.signal.aborted) stop.abort(signal);
    };
    this.#listen(['SIGINT', 'SIGTERM'], onSignal);
    signalOwners.add(this);
    this.#releases.push(() => signalOwners.delete(this));
    return stop.signal;
  }

  /**
   * main.ts ends the program as soon as the action returns, even with calls still in flight: their journal rows are
   * committed as pending and settled by their own keys later, and waiting for them could outlast systemd's stop
   * timeout. The store is still closed first.
   */
  exitWhenDone(): void {
    this.#leaveCallsInFlight = true;
    exitRequested = true;
  }

  /** `abort`: drop the calls in flight instead of waiting for them; a run's answer lost so is settled by its key later. */
  async close(options: { abort?: boolean } = {}): Promise<void> {
    this.output.stopSpinner();
    for (const release of this.#releases.splice(0)) release();
    this.#store?.close();
    this.#store = undefined;
    // Taken before the await: Ctrl+C can close the context while the command's own close still waits.
    const client = this.#client;
    this.#client = undefined;
    if (this.#leaveCallsInFlight) return;
    await (options.abort === true ? client?.destroy() : client?.close());
  }

  #listen(signals: NodeJS.Signals[], listener: (signal: NodeJS.Signals) => void): void {
    for (const signal of signals) process.on(signal, listener);
    this.#releases.push(() => {
      for (const signal of signals) process.off(signal, listener);
    });
  }
}

/** --node, else SWARM_NODE_NAME, checked (contract/node-name.ts): it becomes a path and part of unit names. */
function nodeNameOf(flag: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (flag !== undefined) return checkNodeName(flag, '--node');
  const fromEnv = env.SWARM_NODE_NAME;
  return fromEnv === undefined || fromEnv === '' ? undefined : checkNodeName(fromEnv, 'SWARM_NODE_NAME');
}

const openContexts = new Set<CommandContext>();
let latestContext: CommandContext | undefined;
const signalOwners = new Set<CommandContext>();
let exitRequested = false;

/** Builds the context for a command from its own and its parents' options. */
export function contextFor(command: Command, kind: ContextKind = 'command', overrides: Partial<GlobalOptions> = {}): CommandContext {
  const context = new CommandContext(
    kind,
    { ...command.optsWithGlobals<GlobalOptions & { root?: string }>(), ...overrides },
    process.env,
    process.argv[1],
    commandTable(command),
  );
  openContexts.add(context);
  latestContext = context;
  return context;
}

/** The context of the command that ran last: main.ts shows its error as that command's home acts on it. */
export function lastContext(): CommandContext | undefined {
  return latestContext;
}

export async function closeContexts(options: { abort?: boolean } = {}): Promise<void> {
  const contexts = [...openContexts];
  openContexts.clear();
  for (const context of contexts) await context.close(options);
}

/** A command handles SIGINT itself (CommandContext.stopSignal): main.ts's Ctrl+C handling stands aside. */
export function commandOwnsSignals(): boolean {
  return signalOwners.size > 0;
}

/** A command asked to exit as soon as it returns (CommandContext.exitWhenDone). */
export function exitWhenDoneRequested(): boolean {
  return exitRequested;
}
