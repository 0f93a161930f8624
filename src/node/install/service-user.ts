// The service runs as its own system user (`svc-swarm`, docs/operations.md "What install creates"), created on the
// host at first install. Only on the host as root: a staging --root install leaves owners to whoever deploys the tree.
import { existsSync } from 'node:fs';
import { execa } from 'execa';
import { INSTALL_PATH } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { SERVICE_USER } from '../host/location.js';

export interface ServiceUser {
  uid: number;
  gid: number;
}

export async function lookupServiceUser(name = SERVICE_USER): Promise<ServiceUser | undefined> {
  // getent goes through NSS, so a user from LDAP or systemd-userdb counts too.
  const result = await execa('getent', ['passwd', name], { reject: false, stdin: 'ignore' });
  if (result.exitCode !== 0) return undefined;
  const fields = String(result.stdout).trim().split(':');
  const uid = Number(fields[2]);
  const gid = Number(fields[3]);
  return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
}

export async function createServiceUser(name = SERVICE_USER): Promise<ServiceUser> {
  const shell = ['/usr/sbin/nologin', '/sbin/nologin', '/bin/false'].find((candidate) => existsSync(candidate)) ?? '/bin/false';
  const result = await execa(
    'useradd',
    ['--system', '--user-group', '--no-create-home', '--home-dir', INSTALL_PATH, '--shell', shell, '--comment', 'svc swarm-node', name],
    { reject: false, stdin: 'ignore' },
  );
  const user = await lookupServiceUser(name);
  if (result.exitCode !== 0 || user === undefined) {
    throw new SvcError('failed', `cannot create the service user ${name}: ${String(result.stderr).trim() || 'useradd failed'}`, {
      remedy: `Create it by hand, then re-run the install: useradd --system --user-group --no-create-home --shell ${shell} ${name}`,
    });
  }
  return user;
}

export async function removeServiceUser(name = SERVICE_USER): Promise<string | undefined> {
  if ((await lookupServiceUser(name)) === undefined) return undefined;
  const result = await execa('userdel', [name], { reject: false, stdin: 'ignore' });
  return result.exitCode === 0 ? undefined : `userdel ${name} failed: ${String(result.stderr).trim()}`;
}
