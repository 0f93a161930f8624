// agent_dev_review_012 on a real repository made here, with commits holding each thing it must flag.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { inputSchemaValidator, runAgentProcess } from './agent-process.js';

const AGENT = 'agent_dev_review_012';

// Credentials in the shapes the agent looks for, assembled so this file itself holds none (the review of this
// repository's own history must find no secret in it).
const PEM_KEY = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs1', format: 'pem' }).toString().trim();
const AWS_KEY_ID = ['AKIA', 'Z7Q3VXLM2PKE4HJN'].join('');
const GITHUB_TOKEN = ['ghp', 'aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5'].join('_');
const STRIPE_KEY = ['sk', 'live', '51Hq8ZtLpQm3XvB7nR2cW9dKf4YjA6sE1uT0gP'].join('_');
const PASSWORD = ['Hx9', 'vQ2', 'mL7p'].join('');

interface Finding {
  kind: string;
  severity: string;
  file: string;
  line?: number;
  rule?: string;
  code?: string;
  message: string;
  excerpt?: string;
  fix?: string;
}

let repo: string;
let badCommit: string;

async function gitIn(cwd: string, ...args: string[]): Promise<string> {
  const result = await execa('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', '-c', 'init.defaultBranch=main', ...args], { cwd, env: { HOME: cwd } });
  return result.stdout;
}

function write(path: string, text: string | Buffer): void {
  mkdirSync(dirname(join(repo, path)), { recursive: true });
  writeFileSync(join(repo, path), text);
}

/** A PATH holding git and node only: a host without shellcheck and bandit. */
function pathWithout(): string {
  const bin = tempDir('review-bin-');
  symlinkSync('/usr/bin/git', join(bin, 'git'));
  return bin;
}

/** A repository of one commit holding `files` (path: text). */
async function committedRepo(prefix: string, files: Record<string, string>): Promise<string> {
  const dir = tempDir(prefix);
  await gitIn(dir, 'init', '-q');
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  await gitIn(dir, 'add', '.');
  await gitIn(dir, 'commit', '-q', '-m', 'files');
  return dir;
}

beforeAll(async () => {
  repo = tempDir('review-repo-');
  await gitIn(repo, 'init', '-q');
  write('README.md', '# Demo\n\nHello.\n');
  write('scripts/ok.sh', '#!/bin/sh\necho $greeting\n');
  await gitIn(repo, 'add', '.');
  await gitIn(repo, 'commit', '-q', '-m', 'first');

  write('config/id_rsa', `${PEM_KEY}\n`);
  write('src/app.js', [
    'export const region = "eu-west-1";',
    '// TODO: drop the debug flag before release',
    `const awsKeyId = "${AWS_KEY_ID}";`,
    `const token = '${GITHUB_TOKEN}';`,
    `const password = "${PASSWORD}";`,
    'const apiKey = process.env.API_KEY; // FIXME read from the vault',
    'const secret = "changeme";',
    'export const TODO_MARKER = /TODO/;',
    'export function run(user) { return eval(user.input); }',
    '',
  ].join('\n'));
  write('src/billing.ts', ['import Stripe from "stripe";', `export const stripe = new Stripe("${STRIPE_KEY}");`, 'export function isAdmin(user: { role: string }): boolean {', '  if (user.role = "admin") return true;', '  return false;', '}', ''].join('\n'));
  write('src/report.py', ['def find(cursor, name):', '    cursor.execute("SELECT * FROM users WHERE name = \'%s\'" % name)', '    return eval(name)', ''].join('\n'));
  write('notes.md', ['# Notes', '', '<<<<<<< HEAD', 'ours', '=======', 'theirs', '>>>>>>> feature', ''].join('\n'));
  write('heading.md', ['Title', '=======', '', 'A setext heading is no conflict.', ''].join('\n'));
  write('assets/blob.bin', randomBytes(2 * 1024 * 1024));
  write('assets/small.bin', randomBytes(1024));
  write('scripts/deploy.sh', '#!/bin/sh\nrm -rf $1/*\n');
  write('scripts/ok.sh', '#!/bin/sh\necho $greeting\ncd $target\n');
  await gitIn(repo, 'add', '.');
  await gitIn(repo, 'commit', '-q', '-m', 'the bad commit');
  badCommit = (await gitIn(repo, 'rev-parse', 'HEAD')).trim();

  write('README.md', '# Demo\n\nHello, world.\n');
  await gitIn(repo, 'commit', '-q', '-am', 'polish the readme');
});

afterAll(() => removeTempDirs());

describe('agent_dev_review_012', () => {
  it('flags secrets, code problems, conflict markers, a large binary and to-do comments at their file and line, and writes SARIF', async () => {
    const artifacts = tempDir('review-artifacts-');
    const run = await runAgentProcess(AGENT, { repo, rev: badCommit }, { env: { SWARM_ARTIFACTS_DIR: artifacts } });
    expect(run.exitCode, run.stderr).toBe(0);
    const out = run.json;
    const findings = out.findings as Finding[];
    const lines = (kind: string, file: string) => findings.filter((finding) => finding.kind === kind && finding.file === file).map((finding) => finding.line ?? null);

    expect(out.head).toBe(badCommit);
    expect(out.commits).toBe(1);
    expect(out.summary).toMatch(new RegExp(`^${badCommit} \\(${badCommit.slice(0, 7)} "the bad commit"\\): 5 secrets, 3 conflict markers, 1 large binary, 1 SQL built from strings, \\d+ ESLint issues, \\d+ shellcheck issues, \\d+ bandit issues?, 2 to-do comments in 10 changed files$`));

    expect(findings.filter((finding) => finding.kind === 'secret').map((finding) => [finding.file, finding.line])).toEqual([
      ['config/id_rsa', 1],
      ['src/app.js', 3],
      ['src/app.js', 4],
      ['src/app.js', 5],
      ['src/billing.ts', 2],
    ]);
    // The output is kept with the run: it must not repeat the credentials it found, not even a part of them.
    const text = JSON.stringify(out);
    for (const secret of [AWS_KEY_ID.slice(4), GITHUB_TOKEN.slice(4), STRIPE_KEY.slice(8), PASSWORD, PEM_KEY.split('\n')[1]!.slice(0, 20)]) expect(text).not.toContain(secret);
    expect(findings.find((finding) => finding.file === 'src/app.js' && finding.line === 5)?.excerpt).toBe('const password = "[redacted]";');

    expect(lines('eslint', 'src/app.js')).toEqual([9]);
    expect(findings.filter((finding) => finding.kind === 'eslint' && finding.file === 'src/billing.ts').map((finding) => [finding.line, finding.rule])).toContainEqual([4, 'no-cond-assign']);
    expect(findings.find((finding) => finding.kind === 'eslint' && finding.rule === 'no-eval')?.fix).toMatch(/JSON\.parse/);
    expect(lines('sql', 'src/report.py')).toEqual([2]);
    expect(findings.filter((finding) => finding.kind === 'bandit').map((finding) => [finding.line, finding.rule])).toContainEqual([3, 'B307 blacklist']);
    expect(lines('conflict_marker', 'notes.md')).toEqual([3, 7, 5]);
    expect(lines('conflict_marker', 'heading.md')).toEqual([]);
    expect(findings.filter((finding) => finding.kind === 'large_binary')).toEqual([expect.objectContaining({ file: 'assets/blob.bin', size_bytes: 2 * 1024 * 1024, severity: 'warning' })]);
    // Comments only: `const TODO_MARKER = /TODO/` is code that holds the word.
    expect(lines('todo', 'src/app.js')).toEqual([2, 6]);

    expect(out.tools.shellcheck).toMatchObject({ ran: true, files: 2, checked: 2 });
    expect(findings.filter((finding) => finding.kind === 'shellcheck' && finding.file === 'scripts/deploy.sh').map((finding) => [finding.line, finding.rule])).toEqual(expect.arrayContaining([[2, 'SC2115'], [2, 'SC2086']]));
    // Only the line the commit added to ok.sh is its business; the older line 2 is counted apart.
    expect(new Set(lines('shellcheck', 'scripts/ok.sh'))).toEqual(new Set([3]));
    expect(out.tools.shellcheck.comments_outside_diff).toBeGreaterThanOrEqual(1);
    expect(out.tools).toMatchObject({ eslint: { ran: true, files: 2, checked: 2 }, bandit: { ran: true, files: 1, checked: 1 }, secretlint: { ran: true } });
    expect(out.truncated).toBe(false);

    expect(out.artifacts).toEqual(['review.sarif']);
    const sarif = JSON.parse(readFileSync(join(artifacts, 'review.sarif'), 'utf8'));
    expect(sarif.version).toBe('2.1.0');
    const results = sarif.runs.flatMap((sarifRun: { tool: { driver: { name: string } }; results: { ruleId: string; locations: { physicalLocation: { artifactLocation: { uri: string }; region?: { startLine: number } } }[] }[] }) =>
      sarifRun.results.map((result) => [sarifRun.tool.driver.name, result.locations[0]!.physicalLocation.artifactLocation.uri, result.locations[0]!.physicalLocation.region?.startLine ?? null]),
    );
    expect(results).toHaveLength(Object.values(out.counts as Record<string, number>).reduce((a, b) => a + b, 0));
    expect(results).toEqual(expect.arrayContaining([['eslint', 'src/app.js', 9], ['shellcheck', 'scripts/deploy.sh', 2], ['dev-review', 'src/app.js', 4]]));
    expect(readFileSync(join(artifacts, 'review.sarif'), 'utf8')).not.toContain(GITHUB_TOKEN.slice(4));
  });

  it('reviews HEAD by default, and a range with all its commits', async () => {
    const head = await runAgentProcess(AGENT, { repo });
    expect(head.exitCode, head.stderr).toBe(0);
    expect(head.json.summary).toMatch(/^HEAD \([0-9a-f]{7} "polish the readme"\): nothing flagged in 1 changed file$/);
    expect(head.json.findings).toEqual([]);

    const range = await runAgentProcess(AGENT, { repo, rev: 'HEAD~2..HEAD' });
    expect(range.exitCode, range.stderr).toBe(0);
    expect(range.json.commits).toBe(2);
    expect(range.json.counts).toMatchObject({ secret: 5, conflict_marker: 3, large_binary: 1, todo: 2 });
    expect(range.json.summary).toMatch(/^HEAD~2\.\.HEAD \(2 commits\): 5 secrets, /);

    const root = await runAgentProcess(AGENT, { repo, rev: 'HEAD~2' });
    expect(root.exitCode, root.stderr).toBe(0);
    expect(root.json.base).toBeNull();
    expect(root.json.files_changed).toBe(2);
  });

  it("runs none of the programs a repository's own config names (external diff, textconv, fsmonitor, pager)", async () => {
    const hostile = tempDir('review-hostile-');
    const marker = join(tempDir('review-marker-'), 'ran');
    const payload = join(hostile, 'payload.sh');
    writeFileSync(payload, `#!/bin/sh\necho "$0 $*" >> '${marker}'\ncat "$2" 2>/dev/null\n`, { mode: 0o755 });
    await gitIn(hostile, 'init', '-q');
    writeFileSync(join(hostile, '.gitattributes'), '* diff=evil\n');
    writeFileSync(join(hostile, 'a.txt'), 'one\n');
    await gitIn(hostile, 'add', '.');
    await gitIn(hostile, 'commit', '-q', '-m', 'one');
    writeFileSync(join(hostile, 'a.txt'), 'one\ntwo\n');
    await gitIn(hostile, 'commit', '-q', '-am', 'two');
    for (const key of ['diff.external', 'diff.evil.textconv', 'core.fsmonitor', 'core.pager']) await gitIn(hostile, 'config', key, payload);
    const run = await runAgentProcess(AGENT, { repo: hostile });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.files_changed).toBe(1);
    expect(existsSync(marker)).toBe(false);
  });

  it('lists at most 300 findings, counts them all, and says it cut the list', async () => {
    const busy = tempDir('review-busy-');
    await gitIn(busy, 'init', '-q');
    writeFileSync(join(busy, 'notes.txt'), Array.from({ length: 400 }, (_, i) => `# FIXME item ${i}`).join('\n'));
    await gitIn(busy, 'add', '.');
    await gitIn(busy, 'commit', '-q', '-m', 'many');
    const run = await runAgentProcess(AGENT, { repo: busy });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.json.counts.todo).toBe(400);
    expect(run.json.findings).toHaveLength(300);
    expect(run.json.findings.at(-1)).toMatchObject({ file: 'notes.txt', line: 300 });
    expect(run.json.truncated).toBe(true);
  });

  it('fails, so the run is refunded, when an analyzer a changed file needs is missing, and says what the tools that ran found', async () => {
    const run = await runAgentProcess(AGENT, { repo, rev: badCommit }, { path: pathWithout() });
    expect(run.exitCode).toBe(3);
    expect(run.stdout).toBe('');
    const last = run.stderr.split('\n').at(-1)!;
    expect(last).toMatch(/^agent_dev_review_012: not a full review, so the run is refunded: shellcheck is not installed on this host: 2 changed file\(s\) not checked \(apt-get install shellcheck/);
    expect(last).toContain('bandit is not installed on this host: 1 changed file(s) not checked');
    // What secretlint and ESLint found is still shown, each credential redacted.
    expect(run.stderr).toMatch(/5 secrets, 3 conflict markers, 1 large binary, 1 SQL built from strings, \d+ ESLint issues, 2 to-do comments in 10 changed files \(by the tools that ran\)/);
    expect(run.stderr).toContain('src/app.js:9 eslint no-eval');
    expect(run.stderr).not.toContain(GITHUB_TOKEN.slice(4));

    // A change with no shell script and no Python file needs neither: a full review.
    const readme = await runAgentProcess(AGENT, { repo }, { path: pathWithout() });
    expect(readme.exitCode, readme.stderr).toBe(0);
    expect(readme.json.tools).toMatchObject({ shellcheck: { ran: false, files: 0 }, bandit: { ran: false, files: 0 } });
  });

  it('finds no secret in test fixtures, lock files, placeholders or local database URLs, and finds a real key in a test all the same, and a SendGrid key of any dashes', async () => {
    const clean = await committedRepo('review-clean-', {
      'test/config.test.ts': `const secret = 'not-a-real-secret-just-long';\nconst url = 'postgres://svc:pw-for-tests@127.0.0.1:5432/svc';\nconst key = "${AWS_KEY_ID}";\n`,
      'package-lock.json': '{ "packages": { "node_modules/@inquirer/password": { "version": "4.0.0" } }, "@inquirer/password": "^4.0.0" }\n',
      'src/config.js': "export const password = process.env.DB_PASSWORD;\nexport const apiKey = '${API_KEY}';\nconst secret = '<your-secret-here>';\n",
      // A map of kinds to names (a slug is a name, not a credential), and beside it a literal that is one.
      'src/kinds.js': "const TOOL_OF_KIND = { secret: 'dev-review', todo: 'dev-review' };\nconst creds = { password: 'Kq7w-2Lmz!x' };\n",
      '.env.example': 'DB_PASSWORD=changeme\nAPI_TOKEN=${TOKEN}\n',
      // A SendGrid key whose last part holds several "-": base64url allows it, and secretlint's own rule misses it.
      'src/mail.js': `sgMail.setApiKey('${['SG', 'a93e59zhDT6K19u3nlDRva', 'irx-cI34Qi1-1hWRA-TCR6njsNTrxTMNljnK9g-fR6y'].join('.')}');\n`,
    });
    const run = await runAgentProcess(AGENT, { repo: clean });
    expect(run.exitCode, run.stderr).toBe(0);
    expect((run.json.findings as Finding[]).filter((finding) => finding.kind === 'secret').map((finding) => [finding.file, finding.line])).toEqual([['src/kinds.js', 2], ['src/mail.js', 1], ['test/config.test.ts', 3]]);
  });

  it('finds a secret under a name one of whose words says so, a key whose line breaks are escapes, a URL with a driver and a workflow webhook, and lets masks and examples through', async () => {
    const ecKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'sec1', format: 'pem' }).toString();
    const awsSecret = ['wJ7rXUt', 'nF3MIK7', 'MD9NGbPxRfiCY', 'q8Zk2LmPw4Tn5'].join('');
    const forms = await committedRepo('review-forms-', {
      'infra/main.tfvars': `aws_secret_key = "${awsSecret}"\nsecret_name    = "Prod-Key-9Xq"\npasswordHint   = "Firstpet99"\n`,
      'src/client.js': `const config = { clientSecret: '${PASSWORD}' };\n`,
      'certs/service.json': `{ "key": ${JSON.stringify(ecKey)} }\n`,
      'app/db.py': `engine = create_engine('postgresql+psycopg2://rep:${PASSWORD}@warehouse.internal/reports')\nlocal = create_engine('postgresql+psycopg2://rep:${PASSWORD}@localhost/reports')\n`,
      'ops/hook.json': `{ "url": "https://hooks.slack.com/triggers/${['TQ4Z7K2M9', '7301946285617', 'c0ffee12ab34cd56ef7890ab12cd34ef'].join('/')}" }\n`,
      'docs/keys.md': `Stripe keys look like \`${['sk', 'live', 'x'.repeat(24)].join('_')}\`; AWS's own example is ${['AKIA', 'IOSFODNN7', 'EXAMPLE'].join('')}.\nA key file starts -----BEGIN PRIVATE KEY----- and holds base64.\n`,
    });
    const run = await runAgentProcess(AGENT, { repo: forms });
    expect(run.exitCode, run.stderr).toBe(0);
    const secrets = (run.json.findings as Finding[]).filter((finding) => finding.kind === 'secret');
    expect(secrets.map((finding) => `${finding.file}:${finding.line}`).sort()).toEqual(['app/db.py:1', 'certs/service.json:1', 'infra/main.tfvars:1', 'ops/hook.json:1', 'src/client.js:1']);
    const text = JSON.stringify(run.json);
    for (const secret of [awsSecret.slice(10, 30), PASSWORD, ecKey.split('\n')[1]!.slice(0, 20), ecKey.split('\n')[2]!.slice(0, 20), 'c0ffee12ab34']) expect(text).not.toContain(secret);
  });

  it("finds a secret handed by name to a call and a connection string's password parameter, SQL built by PHP's . and a format call, and to-do markers in TeX, batch and Go template comments", async () => {
    const forms = await committedRepo('review-calls-', {
      'wp-config.php': `<?php\ndefine('DB_PASSWORD', '${PASSWORD}');\ndefine('DB_PASSWORD', getenv('WORDPRESS_DB_PASSWORD'));\ndefine('AUTH_KEY', 'put your unique phrase here');\n`,
      'app.properties': `spring.datasource.url=jdbc:postgresql://db.internal:5432/orders?user=orders&password=${PASSWORD}\nreports.url=jdbc:postgresql://db.internal:5432/reports?user=reports\nlocal.url=jdbc:h2:mem:test;password=\${H2_PASSWORD}\n`,
      'store/users.php': '<?php\nfunction user($db, $id) {\n  return $db->query("SELECT * FROM users WHERE id = " . $id);\n}\n$db->query("SELECT * FROM users WHERE id = ?", [$id]);\n',
      'store/users.go': 'package store\n\nfunc byName(db *sql.DB, name string) (*sql.Rows, error) {\n\treturn db.Query(fmt.Sprintf("SELECT * FROM users WHERE name = \'%s\'", name))\n}\nvar q = fmt.Sprintf("%d rows selected from the table", n)\n',
      'misc/markers.txt': ['REM TODO: sign the installer', ':: FIXME quote the path', '%% FIXME: the proof skips the base case', '{{/* TODO: paginate */}}', 'set /a TODO_COUNT=0', 'grows 100% TODO-free'].join('\n') + '\n',
    });
    const run = await runAgentProcess(AGENT, { repo: forms });
    expect(run.exitCode, run.stderr).toBe(0);
    const findings = run.json.findings as Finding[];
    const at = (kind: string) => findings.filter((finding) => finding.kind === kind).map((finding) => `${finding.file}:${finding.line}`).sort();
    expect(at('secret')).toEqual(['app.properties:1', 'wp-config.php:2']);
    expect(at('sql')).toEqual(['store/users.go:4', 'store/users.php:3']);
    expect(at('todo')).toEqual(['misc/markers.txt:1', 'misc/markers.txt:2', 'misc/markers.txt:3', 'misc/markers.txt:4']);
    expect(JSON.stringify(run.json)).not.toContain(PASSWORD);
  });

  it('finds a secret handed to a setter, in an environment string or a map entry, and an ODBC PWD; SQL interpolated in Ruby, PHP, Kotlin and C#; to-do markers in the comments of more languages', async () => {
    const forms = await committedRepo('review-setters-', {
      'src/main/java/Db.java': `ds.setPassword("${PASSWORD}");\nuser.hashPassword("${PASSWORD}");\nds.setPasswordHint("${PASSWORD}");\nds.setPassword(System.getenv("DB_PASSWORD"));\n`,
      'web/boot.php': `<?php\nputenv("DB_PASSWORD=${PASSWORD}");\nputenv("PATH=/usr/local/bin");\n`,
      'config/boot.rb': `ENV['DB_PASSWORD'] = '${PASSWORD}'\nENV['DB_PASSWORD_FILE'] = '/run/secrets/db'\n`,
      'Api/Odbc.cs': `var cs = "Driver={ODBC Driver 18 for SQL Server};Server=db;UID=sa;PWD=${PASSWORD};";\nvar pattern = "Server=db;UID=sa;PWD={0};";\n`,
      'app/models/user.rb': ['class User < ApplicationRecord', '  def self.named(name)', "    where(\"name = '#{name}'\")", '  end', '  def self.safe(name)', '    where("name = ?", name)', '  end', 'end'].join('\n') + '\n',
      'web/users.php': ['<?php', '$db->query("SELECT * FROM users WHERE id = {$user->id}");', "$db->query('SELECT * FROM users WHERE id = $1');"].join('\n') + '\n',
      'app/Orders.kt': ['fun drop(stmt: Statement, order: Order) = stmt.executeUpdate("DELETE FROM orders WHERE id = ${order.id}")', 'fun find(db: Db, id: Int) = db.query("SELECT * FROM orders WHERE id = $1", id)'].join('\n') + '\n',
      'Api/Search.cs': ['cmd.CommandText = $@"SELECT * FROM users WHERE name = \'{name}\'";', 'cmd.CommandText = "SELECT * FROM users WHERE name = @name";'].join('\n') + '\n',
      'misc/markers.txt': ['(* TODO: prove it terminates *)', "' TODO: remove the COM shim", '{# FIXME: escape the title #}', '<%# TODO: paginate %>', '{/* FIXME: alt text */}', "x = 'TODO'", '{ TODO, DONE } = states', '$TODO_FILE = "notes/TODO.txt";'].join('\n') + '\n',
    });
    const run = await runAgentProcess(AGENT, { repo: forms });
    expect(run.exitCode, run.stderr).toBe(0);
    const findings = run.json.findings as Finding[];
    const at = (kind: string) => findings.filter((finding) => finding.kind === kind).map((finding) => `${finding.file}:${finding.line}`).sort();
    expect(at('secret')).toEqual(['Api/Odbc.cs:1', 'config/boot.rb:1', 'src/main/java/Db.java:1', 'web/boot.php:2']);
    expect(at('sql')).toEqual(['Api/Search.cs:1', 'app/Orders.kt:1', 'app/models/user.rb:3', 'web/users.php:2']);
    expect(at('todo')).toEqual([1, 2, 3, 4, 5].map((line) => `misc/markers.txt:${line}`));
    expect(JSON.stringify(run.json)).not.toContain(PASSWORD);
  });

  it("finds an AWS secret beside its key id, a Kubernetes Secret's base64 private key, an XML key/value pair, libpq's keyword password and an exported one; to-do markers in Fortran and Haskell comments", async () => {
    const awsSecret = ['wJ7rXUt', 'nF3MIK7', 'MD9NGbPxRfiCY', 'q8Zk2LmPw4Tn5'].join('');
    const forms = await committedRepo('review-contexts-', {
      'src/S3Config.java': `class S3Config {\n  static final BasicAWSCredentials C = new BasicAWSCredentials(\n      "${AWS_KEY_ID}",\n      "${awsSecret}");\n}\n`,
      // A commit id beside a key id is no secret: hex, one case.
      'docs/aws.md': `The key ${['AKIA', 'IOSFODNN7', 'EXAMPLE'].join('')} came in 9fceb02d0ae598e95dc970b74767f19372d61af8.\n`,
      'k8s/tls.yaml': `apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\ndata:\n  tls.crt: ${Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB').toString('base64')}\n  tls.key: ${Buffer.from(PEM_KEY).toString('base64')}\n`,
      'Web.config': `<configuration>\n  <appSettings>\n    <add key="SmtpPassword" value="${PASSWORD}" />\n    <add key="SmtpPassword" value="#{SmtpPassword}#" />\n    <add key="SmtpHost" value="smtp.internal" />\n  </appSettings>\n</configuration>\n`,
      'etl/connect.py': `conn = psycopg2.connect("host=warehouse.internal dbname=etl user=etl password=${PASSWORD} sslmode=require")\nconn = psycopg2.connect(f"host={host} dbname=etl password={os.environ['PGPASSWORD']}")\n`,
      '.envrc': `export PGPASSWORD=${PASSWORD}\nexport PGHOST=warehouse.internal\nexport OPENAI_API_KEY=sk-proj-...\n`,
      'misc/markers.txt': ['! TODO: vectorise the inner loop', '{- TODO: use Text -}', 'if (x != TODO) return;'].join('\n') + '\n',
    });
    const run = await runAgentProcess(AGENT, { repo: forms });
    expect(run.exitCode, run.stderr).toBe(0);
    const findings = run.json.findings as Finding[];
    const at = (kind: string) => findings.filter((finding) => finding.kind === kind).map((finding) => `${finding.file}:${finding.line}`).sort();
    expect(at('secret')).toEqual(['.envrc:1', 'Web.config:3', 'etl/connect.py:1', 'k8s/tls.yaml:7', 'src/S3Config.java:3', 'src/S3Config.java:4']);
    expect(at('todo')).toEqual(['misc/markers.txt:1', 'misc/markers.txt:2']);
    const text = JSON.stringify(run.json);
    for (const secret of [PASSWORD, awsSecret.slice(10, 30), Buffer.from(PEM_KEY).toString('base64').slice(40, 80)]) expect(text).not.toContain(secret);
  });

  it("finds a secret XML property, a credential's positional password and a compose file's environment entry, not a secret's file path; SQL made with Rust's format!, a case that falls through, a Razor to-do", async () => {
    const forms = await committedRepo('review-positions-', {
      'conf/core-site.xml': `<configuration>\n  <property>\n    <name>fs.s3a.secret.key</name>\n    <value>${PASSWORD}</value>\n  </property>\n  <property>\n    <name>fs.s3a.endpoint</name>\n    <value>s3.eu-west-1.amazonaws.com</value>\n  </property>\n</configuration>\n`,
      'Mailer.cs': `var credentials = new NetworkCredential("orders@acme.io", "${PASSWORD}");\nvar client = new SmtpClient("smtp.office365.com", 587);\n`,
      'compose.yml': `services:\n  db:\n    environment:\n      - MARIADB_USER=shop\n      - MARIADB_PASSWORD=${PASSWORD}\n      - MARIADB_PASSWORD_FILE=/run/secrets/db_password\n`,
      'src/db.rs': 'fn find(conn: &Connection, name: &str) {\n    conn.execute(&format!("SELECT * FROM users WHERE name = \'{}\'", name), []);\n}\n',
      'src/state.js': 'export function next(state) {\n  switch (state) {\n    case 1:\n      state += 1;\n    case 2:\n      return 3;\n  }\n}\n',
      'misc/markers.txt': '@* TODO: localise the date *@\nemail@*TODO.example\n',
    });
    const run = await runAgentProcess(AGENT, { repo: forms });
    expect(run.exitCode, run.stderr).toBe(0);
    const findings = run.json.findings as Finding[];
    const at = (kind: string) => findings.filter((finding) => finding.kind === kind).map((finding) => `${finding.file}:${finding.line}`).sort();
    expect(at('secret')).toEqual(['Mailer.cs:1', 'compose.yml:5', 'conf/core-site.xml:4']);
    expect(at('sql')).toEqual(['src/db.rs:2']);
    expect(findings.filter((finding) => finding.rule === 'no-fallthrough').map((finding) => `${finding.file}:${finding.line}`)).toEqual(['src/state.js:5']);
    expect(at('todo')).toEqual(['misc/markers.txt:1']);
    expect(JSON.stringify(run.json)).not.toContain(PASSWORD);
  });

  // docs/sections/starter-agents.md: a finding never shows a credential, whatever tool quoted it. Each value here is
  // planted where a tool's own text repeats it: bandit's message for a hard-coded password (B105, B106, B107), an
  // ESLint message naming a duplicate key, a shellcheck finding on the line that holds a token, git's error naming a
  // revision. None of them may reach the output, the SARIF or stderr, in whole or in part.
  it("never repeats a credential a tool quotes: bandit's password messages, ESLint's, shellcheck's line, git's error", async () => {
    const pythonPasswords = [['Qm7', 'vX2', 'pL9', 'sK4'].join(''), ['Wn3', 'rT8', 'bY5', 'dF1'].join(''), ['Zc6', 'hJ2', 'uN7', 'eG9'].join('')];
    const stripeKey = ['sk', 'live', '51Nx7YtKpRm2WvC8nQ3dX0eLf5ZkB7tG2uS1hO'].join('_');
    const token = ['ghp', 'Rt5eY7uI9oP1aS3dF5gH7jK9lZ1xC3vB5nM7'].join('_');
    const dir = await committedRepo('review-quoting-', {
      'app/db.py': [
        `password = "${pythonPasswords[0]}"`,
        'def connect(host, password): return (host, password)',
        `conn = connect("db", password="${pythonPasswords[1]}")`,
        `def login(user, password="${pythonPasswords[2]}"): return user`,
        '',
      ].join('\n'),
      'web/keys.js': [`export const keys = { "${stripeKey}": 1, "${stripeKey}": 2 };`, ''].join('\n'),
      'deploy/push.sh': ['#!/bin/sh', `curl -H "Authorization: Bearer ${token}" $url`, ''].join('\n'),
    });
    const artifacts = tempDir('review-quoting-artifacts-');
    const run = await runAgentProcess(AGENT, { repo: dir }, { env: { SWARM_ARTIFACTS_DIR: artifacts } });
    expect(run.exitCode, run.stderr).toBe(0);
    const findings = run.json.findings as Finding[];
    // The tools ran and said their piece: the redaction took their words out, not their findings.
    // Debian 12's bandit (1.6.2, on Python 3.11+) no longer reports B105's plain assignment; B106 and B107 quote theirs.
    expect(findings.filter((finding) => finding.kind === 'bandit').map((finding) => finding.rule)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^B106/), expect.stringMatching(/^B107/)]),
    );
    expect(findings.some((finding) => finding.kind === 'eslint' && /duplicate key/i.test(finding.message))).toBe(true);
    expect(findings.some((finding) => finding.kind === 'shellcheck' && finding.file === 'deploy/push.sh')).toBe(true);
    const written = [run.stdout, run.stderr, readFileSync(join(artifacts, 'review.sarif'), 'utf8')].join('\n');
    for (const value of [...pythonPasswords, stripeKey, token]) {
      // A part of one is as bad as the whole: no eight characters of it in a row.
      for (let start = 0; start + 8 <= value.length; start += 1) expect(written, value).not.toContain(value.slice(start, start + 8));
    }
    expect(written).toContain('[redacted]');

    const refused = await runAgentProcess(AGENT, { repo: dir, rev: token });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/rev/);
    expect(refused.stderr).not.toContain(token.slice(4, 20));
  });

  // docs/sections/starter-agents.md: secrets are searched in every text file up to 64 MiB, whatever the analyzers
  // skip; a review with a file it could not search is refunded (exit 3) and names it.
  it('searches a text file too large for the analyzers for secrets as it streams, and refunds a review with one it cannot search', async () => {
    const key = ['sk', 'live', '51Pz8XtLqRn4WvD9mQ2eY1fKg6ZjC8uH3vT2iN'].join('_');
    const filler = `${'x'.repeat(1023)}\n`;
    // 3 MiB of text, then the key on its last line, and a modified file over 1 MiB whose change adds a key mid-file.
    const big = `${filler.repeat(3 * 1024)}const stripe = "${key}";\n`;
    const dir = await committedRepo('review-large-', { 'data/seed.js': big, 'data/grown.txt': filler.repeat(1536) });
    writeFileSync(join(dir, 'data/grown.txt'), `${filler.repeat(768)}STRIPE_KEY="${key}"\n${filler.repeat(768)}`);
    await gitIn(dir, 'commit', '-q', '-am', 'grow');
    const seeded = await runAgentProcess(AGENT, { repo: dir, rev: 'HEAD~1' });
    expect(seeded.exitCode, seeded.stderr).toBe(0);
    expect((seeded.json.findings as Finding[]).filter((finding) => finding.kind === 'secret').map((finding) => [finding.file, finding.line])).toEqual([
      ['data/seed.js', 3 * 1024 + 1],
    ]);
    expect(seeded.json.summary).toMatch(/code analysis skipped 2 file\(s\) over 1 MiB, searched for secrets only: data\/grown\.txt, data\/seed\.js$/);
    const grown = await runAgentProcess(AGENT, { repo: dir });
    expect(grown.exitCode, grown.stderr).toBe(0);
    expect((grown.json.findings as Finding[]).filter((finding) => finding.kind === 'secret').map((finding) => [finding.file, finding.line])).toEqual([
      ['data/grown.txt', 769],
    ]);
    expect(JSON.stringify(grown.json)).not.toContain(key.slice(8, 24));

    // Over 64 MiB, in lines of 4 KiB (few enough for the diff's cut): not searched, so not a full review.
    const huge = await committedRepo('review-huge-', { 'dump/huge.sql': `${'y'.repeat(4095)}\n`.repeat(16_400) });
    const refused = await runAgentProcess(AGENT, { repo: huge });
    expect(refused.exitCode, refused.stderr).toBe(3);
    expect(refused.stderr).toMatch(/not a full review, so the run is refunded: 1 file\(s\) not searched for secrets \(over 64 MiB[^)]*\): dump\/huge\.sql/);
  }, 120_000);

  it('refuses a missing repository, a directory that is no repository, and revisions that are no commit or look like options', async () => {
    const notRepo = tempDir('review-plain-');
    const marker = join(tempDir('review-out-'), 'written');
    for (const [input, message] of [
      [{ repo: join(notRepo, 'missing') }, `repo: no directory at ${join(notRepo, 'missing')}`],
      [{ repo: 'relative/path' }, 'repo: must be an absolute path'],
      [{ repo: notRepo }, `repo: ${notRepo} is not a git repository`],
      [{ repo, rev: 'no-such-branch' }, 'rev: "no-such-branch" is not a commit of'],
      [{ repo, rev: `--output=${marker}` }, 'starts with "-"'],
      [{ repo, rev: `HEAD..--output=${marker}` }, 'starts with "-"'],
      [{ repo, rev: 'HEAD; rm -rf /' }, 'must not contain whitespace'],
      [{ repo, branch: 'main' }, 'unknown field "branch"'],
    ] as const) {
      const run = await runAgentProcess(AGENT, input);
      expect(run.exitCode, JSON.stringify(input)).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stdout).toBe('');
    }
    expect(existsSync(marker)).toBe(false);
  });

  it('has an input_schema that takes the documented inputs and refuses others', () => {
    const valid = inputSchemaValidator(AGENT);
    expect(valid({ repo: '/srv/app' })).toBe(true);
    expect(valid({ repo: '/srv/app', rev: 'main~3..main' })).toBe(true);
    expect(valid({})).toBe(false);
    expect(valid({ repo: 'srv/app' })).toBe(false);
    expect(valid({ repo: '/srv/app', rev: '--output=/tmp/x' })).toBe(false);
    expect(valid({ repo: '/srv/app', rev: '' })).toBe(false);
    expect(valid({ repo: '/srv/app', branch: 'main' })).toBe(false);
  });
});
