// Which proxy a request goes through, from the environment, as curl and undici's EnvHttpProxyAgent read it:
// http_proxy for http URLs, https_proxy for https (lower case first, then upper), and no_proxy (or NO_PROXY) a
// comma- or space-separated list of hosts that go direct: `*` for all, `example.com` or `.example.com` for it and
// its subdomains, an optional `:port`. install passes the installing shell's variables to the service's environment.

export function proxyFor(target: URL, env: NodeJS.ProcessEnv): URL | undefined {
  const https = target.protocol === 'https:';
  const configured = (https ? (env.https_proxy ?? env.HTTPS_PROXY) : (env.http_proxy ?? env.HTTP_PROXY)) ?? '';
  if (configured.trim() === '' || bypassed(target, env.no_proxy ?? env.NO_PROXY ?? '')) return undefined;
  try {
    return new URL(configured.includes('://') ? configured : `http://${configured}`);
  } catch {
    return undefined;
  }
}

function bypassed(target: URL, noProxy: string): boolean {
  const host = target.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = target.port || (target.protocol === 'https:' ? '443' : '80');
  for (const entry of noProxy.split(/[\s,]+/).filter(Boolean)) {
    if (entry === '*') return true;
    const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(entry.toLowerCase());
    if (match === null) continue;
    const [, name, entryPort] = match;
    if (entryPort !== undefined && entryPort !== port) continue;
    const suffix = name!.replace(/^\[|\]$/g, '').replace(/^\*?\./, '');
    if (host === suffix || host.endsWith(`.${suffix}`)) return true;
  }
  return false;
}
