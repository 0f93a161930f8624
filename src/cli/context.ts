// What a command's action is given: its output, the configuration in force, the node's files, and the service
// client and local store, opened on first use. Heavy modules (undici, better-sqlite3) load only then, so
// commands that don't need them, and --help, start fast (STYLE.md pattern 7).
import type { Command } from 'commander';
import { SvcError } from '../contract/errors.js';
import { systemClock, type Clock } from '../lib/clock.js';
import type { SqliteDatabase } from '../lib/sqlite.js';
import { readConfigFile, resolveConfig, type ConfigFile, type ResolvedConfig } from '../node/config.js';
import { readCredentials, type Credentials, type StoredJwt } from '../node/credentials.js';
import { nodePaths, resolveHome, type NodePaths } from '../node/home.js';
import type { ServiceClient } from '../node/service-client.js';
import type { StoreRole } from '../node/store/database.js';
import { Output } from './output.js';

export interface GlobalOptions {
  json?: boolean;
  color?: boolean;
  baseUrl?: string;
}

export class CommandContext {
  readonly output: Output;
  readonly paths: NodePaths;
  readonly env: NodeJS.ProcessEnv;
  readonly clock: Clock = systemClock;
  readonly #flags: GlobalOptions;
  #config: ResolvedConfig | undefined;
  #client: ServiceClient | undefined;
  #store: SqliteDatabase | undefined;

  constructor(flags: GlobalOptions, env: NodeJS.ProcessEnv = process.env) {
    this.#flags = flags;
    this.env = env;
    this.output = new Output({ json: flags.json === true, color: flags.color !== false, env });
    this.paths = nodePaths(resolveHome(env));
  }

  get json(): boolean {
    return this.output.json;
  }

  configFile(): ConfigFile {
    return readConfigFile(this.paths.configFile);
  }

  config(): ResolvedConfig {
    this.#config ??= resolveConfig({ flags: { base_url: this.#flags.baseUrl }, env: this.env, file: this.configFile() });
    return this.#config;
  }

  async client(): Promise<ServiceClient> {
    if (this.#client === undefined) {
      const { ServiceClient } = await import('../node/service-client.js');
      const config = this.config();
      this.#client = new ServiceClient({ baseUrl: config.base_url, deadlineMs: config.timeout_seconds * 1000 });
    }
    return this.#client;
  }

  async store(role: StoreRole = 'command'): Promise<SqliteDatabase> {
    if (this.#store === undefined) {
      const { openNodeStore } = await import('../node/store/database.js');
      this.#store = openNodeStore(this.paths.databaseFile, role);
    }
    return this.#store;
  }

  credentials(): Credentials {
    return readCredentials(this.paths.credentialsFile);
  }

  /** The stored JWT, when there is one that has not expired by the local clock. */
  requireJwt(): StoredJwt {
    const jwt = this.credentials().jwt;
    if (jwt === undefined) throw new SvcError('not_signed_in', 'this node is not signed in');
    if (jwt.exp * 1000 <= this.clock.now()) {
      throw new SvcError('token_expired', `the stored access token expired on ${new Date(jwt.exp * 1000).toISOString()}`);
    }
    return jwt;
  }

  /** Whether a person can answer a prompt: stdin is a terminal and --json was not asked for. */
  canPrompt(): boolean {
    return Boolean(process.stdin.isTTY) && !this.json;
  }

  /** `abort`: drop the calls in flight instead of waiting for them; a run's answer lost so is settled by its key later. */
  async close(options: { abort?: boolean } = {}): Promise<void> {
    this.output.stopSpinner();
    this.#store?.close();
    this.#store = undefined;
    // Taken before the await: Ctrl+C can close the context while the command's own close still waits.
    const client = this.#client;
    this.#client = undefined;
    await (options.abort === true ? client?.destroy() : client?.close());
  }
}

const openContexts = new Set<CommandContext>();

/** Builds the context for a command from its own and its parents' options. */
export function contextFor(command: Command): CommandContext {
  const context = new CommandContext(command.optsWithGlobals<GlobalOptions>());
  openContexts.add(context);
  return context;
}

export async function closeContexts(options: { abort?: boolean } = {}): Promise<void> {
  const contexts = [...openContexts];
  openContexts.clear();
  for (const context of contexts) await context.close(options);
}
