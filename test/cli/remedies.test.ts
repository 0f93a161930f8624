// Every remedy the CLI prints is a command that works as printed (docs/api.md "The node's client: decisions",
// "Remedies"). Two halves:
// - every remedy written in the source (remedy-texts.ts walks it: a new one is covered without editing this file)
//   names no placeholder a person would have to replace, and each swarm-node command in it parses as printed;
// - the remedies of the failures a person meets are run as printed, with the built CLI against a real svc-api (in a
//   pseudo-terminal where they ask something), and do what they say.
import { CommanderError, type Command } from 'commander';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { commandsIn, commandTable, Invocation } from '../../src/cli/invocation.js';
import { buildProgram } from '../../src/cli/program.js';
import { ERROR_CODES } from '../../src/contract/errors.js';
import { readCredentials, writeCredentials } from '../../src/node/identity/credentials.js';
import { asPrinted, nodeEnv, runProgram, swarmNode, type CliResult } from '../helpers/cli.js';
import { activatedSession, payAndConfirm, signIn } from '../helpers/funnel.js';
import { SWARM_NODE_BIN, useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import { signedInNode, walletBalance } from './fixtures.js';
import { HOLE, remedyTexts } from './remedy-texts.js';
import { printedCommands, remedyOf, runAsPrinted, runAsPrintedInTerminal, runAsPrintedUntil } from './remedy-runner.js';

const AGENT = 'agent_ops_monitor_004';

/** The program with every action a no-op: parsing is all that runs. */
function parsingProgram(): Command {
  const program = buildProgram();
  const quiet = (command: Command): void => {
    command.action(() => undefined);
    command.commands.forEach(quiet);
  };
  quiet(program);
  return program;
}

/** Why `args` does not parse as swarm-node's arguments; undefined when it does. */
async function parseProblem(args: string[]): Promise<string | undefined> {
  try {
    await parsingProgram().parseAsync(args, { from: 'user' });
    return undefined;
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    // A value only the running code has may not be one of an option's choices here: it is, there.
    if (error.code === 'commander.invalidArgument' && error.message.includes(HOLE)) return undefined;
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return undefined;
    return error.message;
  }
}

describe('every remedy in the source', () => {
  const texts = remedyTexts();
  const commands = commandTable(buildProgram().commands[0]!);

  it('the walk finds the remedies of the error table, of the node and of the CLI', () => {
    const where = texts.map((text) => text.where);
    expect(where).toContain('ERROR_CODES.not_signed_in');
    expect(where.some((each) => each.startsWith('src/node/identity/credentials.ts'))).toBe(true);
    expect(where.some((each) => each.startsWith('src/cli/commands/register.ts'))).toBe(true);
    expect(where.some((each) => each.startsWith('src/node/wizard/run-wizard.ts'))).toBe(true);
    expect(texts.length).toBeGreaterThan(100);
  });

  it('names no placeholder (<file>, <email>): a person would have to know what to put there', () => {
    const withPlaceholders = texts.filter((each) => /<[a-z][a-z_ -]*>/i.test(each.text)).map((each) => `${each.where}: ${each.text}`);
    expect(withPlaceholders).toEqual([]);
  });

  it('each swarm-node command in a remedy parses as printed', async () => {
    const problems: string[] = [];
    for (const each of texts) {
      for (const command of commandsIn(each.text, commands)) {
        const problem = await parseProblem(command.args);
        if (problem !== undefined) problems.push(`${each.where}: ${command.text}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  });
});

describe('the remedies a person meets, run as printed', () => {
  const service = useSvcApi();

  /** Runs each command of the remedy a failure printed, as printed; each must succeed. */
  async function followRemedy(result: CliResult, email: string, options: { skip?: RegExp } = {}): Promise<string[]> {
    const remedy = remedyOf(result);
    const commands = printedCommands(remedy).filter((command) => options.skip === undefined || !options.skip.test(command.text));
    expect(commands.length, remedy).toBeGreaterThan(0);
    for (const command of commands) {
      // What asks (login) is answered in a terminal; the rest runs in a plain shell.
      if (command.args[0] === 'login') {
        const typed = await runAsPrintedInTerminal(command.text, email);
        expect(typed.exitCode, `${command.text}\n${typed.screen}`).toBe(0);
      } else {
        const ran = await runAsPrinted(command.text);
        expect(ran.exitCode, `${command.text}\n${ran.stdout}${ran.stderr}`).toBe(0);
      }
    }
    return commands.map((command) => command.text);
  }

  it('in a checkout, whose swarm-node is on no PATH: the login it names is ./bin/swarm-node.js, and runs as printed there', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'remedy-checkout' });
    expect((await swarmNode(['logout', '--local'], { env: node.env })).exitCode).toBe(0);
    // The checkout's own bin/, run from its root by a shell whose PATH has no swarm-node (the tests' has one).
    const checkout = join(SWARM_NODE_BIN, '..', '..');
    const path = (process.env.PATH ?? '/usr/bin:/bin')
      .split(':')
      .filter((dir) => !existsSync(join(dir, 'swarm-node')))
      .join(':');
    const refused = await swarmNode(['register', AGENT], { env: { ...node.env, PATH: path }, cwd: checkout });
    expect(refused.exitCode).toBe(4);
    const login = `SWARM_NODE_HOME=${node.home} ./bin/swarm-node.js login --email ${node.email} --base-url ${service.baseUrl}`;
    expect(await followRemedy(refused, node.email)).toEqual([login]);
    expect((await swarmNode(['register', AGENT], { env: node.env })).exitCode).toBe(0);
  });

  it('register when not signed in: the login it names, typed in another shell, signs in this home', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'remedy-signed-out' });
    expect((await swarmNode(['logout', '--local'], { env: node.env })).exitCode).toBe(0);
    const refused = await swarmNode(['register', AGENT], { env: node.env });
    expect(refused.exitCode).toBe(4);
    expect(await followRemedy(refused, node.email)).toEqual([asPrinted(node, `swarm-node login --email ${node.email}`)]);
    expect((await swarmNode(['register', AGENT], { env: node.env })).exitCode).toBe(0);
  });

  it('an expired token: the login it names signs in again', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'remedy-expired' });
    const file = join(node.home, 'etc', 'credentials.json');
    const credentials = readCredentials(file);
    writeCredentials(file, { ...credentials, jwt: { ...credentials.jwt!, exp: Math.floor(Date.now() / 1000) - 60 } });
    const refused = await swarmNode(['whoami'], { env: node.env });
    expect(refused.exitCode).toBe(4);
    await followRemedy(refused, node.email);
    expect((await swarmNode(['whoami'], { env: node.env })).exitCode).toBe(0);
  });

  it(
    'a token file that holds no token: exit 4, and the login it names asks for the address and the code',
    { timeout: 60_000 },
    async () => {
      const email = uniqueEmail('remedy-garbage');
      await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
      const node = nodeEnv(service.baseUrl);
      const file = join(tempDir('remedy-token-'), 'token');
      writeFileSync(file, 'not a token\n');
      const refused = await swarmNode(['login', '--token-file', file], { env: node.env });
      expect(refused.exitCode).toBe(4);
      await followRemedy(refused, email);
      expect((await swarmNode(['--json', 'whoami'], { env: node.env })).json).toMatchObject({ sub: email });
    },
  );

  it('register on a home that is not a node: the enroll it names makes it one', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'remedy-bare', enroll: false });
    const refused = await swarmNode(['register', AGENT], { env: node.env });
    expect(refused.exitCode).toBe(4);
    await followRemedy(refused, node.email);
    expect((await swarmNode(['register', AGENT], { env: node.env })).exitCode).toBe(0);
  });

  it('no node serves the agent: the fleet listed, this host enrolled, and the run it names runs here', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'remedy-no-node', enroll: false, fundCents: 100 });
    const refused = await swarmNode(['run', AGENT], { env: node.env });
    expect(refused.exitCode).toBe(1);
    // The daemon it names is for a node that serves the agent ("on it"): this host serves none yet.
    const ran = await followRemedy(refused, node.email, { skip: / daemon/ });
    expect(ran.map((command) => command.split(' ')[2])).toEqual(['nodes', 'enroll', 'run']);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100 - 4);
  });

  it('run --label on an enrolled node that lacks the label: no enroll; the labels add it names, then the run it names, runs here', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'remedy-own-label', fundCents: 100 });
    const refused = await swarmNode(['run', AGENT, '--label', 'GPU'], { env: node.env });
    expect(refused.exitCode).toBe(1);
    // This host is a node already: enrolling it (again) changes nothing, its labels do.
    expect(remedyOf(refused)).not.toContain('swarm-node enroll');
    const ran = await followRemedy(refused, node.email);
    expect(ran).toEqual([asPrinted(node, 'swarm-node labels add gpu'), asPrinted(node, `swarm-node run ${AGENT} --label gpu`)]);
    expect(await walletBalance(service.baseUrl, node.token)).toBe(100 - 4);
  });

  it('a credentials file that is not JSON: the remedy names where it breaks, and starting afresh works as printed', async () => {
    const node = await signedInNode(service.baseUrl, { label: 'remedy-broken' });
    const file = join(node.home, 'etc', 'credentials.json');
    const text = readFileSync(file, 'utf8');
    // A hand edit that lost a comma: line 3 of the file.
    writeFileSync(file, text.replace(/",\n/, '"\n'), { mode: 0o600 });
    const refused = await swarmNode(['whoami'], { env: node.env });
    expect(refused.exitCode).toBe(1);
    const [, line, column] = /is not valid JSON \(line (\d+), column (\d+)\)/.exec(refused.stderr) ?? [];
    expect(Number(line)).toBeGreaterThanOrEqual(3);
    expect(refused.stderr).not.toContain(node.token);
    const remedy = remedyOf(refused);
    expect(remedy).toMatch(/it holds this node's enrollment \(its node id and credential\) and the sign-in/);
    // The spot, as python's json.tool names it (exit 1: the file is broken), then starting afresh.
    const spot = await runAsPrinted(`python3 -m json.tool ${file}`);
    expect([spot.exitCode, spot.stderr]).toEqual([1, expect.stringContaining(`line ${line} column ${column}`)]);
    expect((await runAsPrinted(`mv ${file} ${file}.broken`)).exitCode).toBe(0);
    expect(await followRemedy(refused, node.email, { skip: / nodes/ })).toHaveLength(2);
    expect((await swarmNode(['--json', 'whoami'], { env: node.env })).json).toMatchObject({ sub: node.email });
  });

  it('a named node under a staging root (--node, --root): the remedy acts on that node when typed elsewhere', async () => {
    const email = uniqueEmail('remedy-named');
    const { deploy_token } = await activatedSession(service.baseUrl, email);
    const root = tempDir('remedy-root-');
    const installed = await swarmNode(['install', '--root', root, '--name', 'gpu', '--no-start'], {
      env: { SVC_BASE_URL: service.baseUrl, SVC_DEPLOY_TOKEN: deploy_token, NO_COLOR: '1' },
    });
    expect(installed.exitCode, installed.stderr).toBe(0);
    const home = join(root, 'opt/svc/swarm-node/nodes/gpu');
    // The node's own binary, on a shell without the environment of a test node whose PATH finds it there.
    const bin = join(root, 'usr/local/bin/swarm-node');
    const shell = { NO_COLOR: '1', PATH: `${join(root, 'usr/local/bin')}:${process.env.PATH ?? '/usr/bin:/bin'}` };
    const refused = await runProgram(bin, ['--node', 'gpu', 'whoami'], { env: shell, extendEnv: false });
    expect(refused.exitCode).toBe(4);
    expect(await followRemedy(refused, email)).toEqual([`SWARM_NODE_HOME=${home} swarm-node login --email ${email} --node gpu`]);
    expect(readCredentials(join(home, 'etc', 'credentials.json')).jwt?.sub).toBe(email);

    // An install command takes --root itself: the purge it names removes that node, and only it.
    const unconfirmed = await runProgram(bin, ['--node', 'gpu', 'uninstall', '--purge'], { env: shell, extendEnv: false });
    expect(unconfirmed.exitCode).toBe(2);
    const [purge] = printedCommands(remedyOf(unconfirmed));
    expect(purge!.text).toBe(`swarm-node uninstall --purge --yes --root ${root} --node gpu`);
    expect((await runAsPrinted(purge!.text)).exitCode).toBe(0);
    expect(existsSync(home)).toBe(false);
  });
});

describe('the error table: each command its remedies name, run as printed on a node', () => {
  const service = useSvcApi();
  // Walked, not listed: a code added to the table with a command in its remedy is run here without editing this file.
  const commands = Object.entries(ERROR_CODES).flatMap(([code, info]) =>
    'remedy' in info ? printedCommands(info.remedy).map((command) => [code, command.text] as const) : [],
  );
  const distinct = commands.filter(([, text], index) => commands.findIndex(([, other]) => other === text) === index);

  it('the walk finds the commands of the sign-in, enrollment and fleet remedies', () => {
    expect(distinct.map(([, text]) => text)).toEqual(
      expect.arrayContaining(['swarm-node login', 'swarm-node enroll', 'sudo swarm-node install', 'swarm-node nodes']),
    );
  });

  /**
   * A node as a remedy meets it: a staging install's home (so nothing of this host is touched), signed in, not
   * enrolled yet; each command gets its own, since one may enroll it.
   */
  async function signedInStagingHome(): Promise<{ email: string; root: string; home: string }> {
    const email = uniqueEmail('remedy-table');
    const token = await signIn(service.baseUrl, email);
    const root = tempDir('remedy-table-');
    const home = join(root, 'opt/svc/swarm-node');
    const login = await swarmNode(['login', '--token-stdin'], {
      env: { SWARM_NODE_HOME: home, SVC_BASE_URL: service.baseUrl, NO_COLOR: '1' },
      input: `${token}\n`,
    });
    expect(login.exitCode, login.stderr).toBe(0);
    return { email, root, home };
  }

  it.each(distinct)('%s: %s', { timeout: 60_000 }, async (_code, text) => {
    const node = await signedInStagingHome();
    const invocation = new Invocation({
      commands: commandTable(buildProgram().commands[0]!),
      node: () => ({ home: node.home, name: undefined }),
      baseUrl: service.baseUrl,
    });
    const [printed] = printedCommands(invocation.carry(text));
    if (printed!.args[0] === 'login') {
      const typed = await runAsPrintedInTerminal(printed!.text, node.email);
      expect(typed.exitCode, `${printed!.text}\n${typed.screen}`).toBe(0);
    } else if (printed!.args[0] === 'daemon') {
      expect(await runAsPrintedUntil(printed!.text, /event=daemon_started/)).toMatch(/event=daemon_stopped/);
    } else {
      const ran = await runAsPrinted(printed!.text);
      expect(ran.exitCode, `${printed!.text}\n${ran.stdout}${ran.stderr}`).toBe(0);
    }
  });
});
