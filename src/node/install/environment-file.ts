// docs/operations.md "Proxies": proxy variables reach the service through etc/environment (EnvironmentFile=- in the
// unit). Proxy URLs may carry a password, so the file is root's and 0600: systemd reads it as root before dropping
// privileges.
import { SvcError } from '../../contract/errors.js';

export const PROXY_VARIABLES = ['http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY'] as const;
export const ENVIRONMENT_FILE_MODE = 0o600;

/** The proxy variables set (non-empty) in `env`, in a stable order. */
export function proxyVariables(env: NodeJS.ProcessEnv): Array<[string, string]> {
  const found: Array<[string, string]> = [];
  for (const name of PROXY_VARIABLES) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    if (/[\r\n\0]/.test(value))
      throw new SvcError('usage', `${name} contains a line break or NUL; it cannot go into the service environment`);
    found.push([name, value]);
  }
  return found;
}

/** systemd.exec(5) EnvironmentFile syntax: double quotes, with backslash and double quote escaped. */
export function renderEnvironmentFile(variables: Array<[string, string]>): string {
  const lines = variables.map(([name, value]) => `${name}="${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`);
  return `# Written by swarm-node install from the installing shell's proxy variables; read by ${'svc-swarm-node.service'}.\n${lines.join('\n')}\n`;
}
