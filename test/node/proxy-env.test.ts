// Which proxy the service client's requests go through (src/node/service/http/proxy-env.ts), read from the environment as
// curl and undici read it.
import { describe, expect, it } from 'vitest';
import { proxyFor } from '../../src/node/service/http/proxy-env.js';

const via = (url: string, env: NodeJS.ProcessEnv): string | undefined => proxyFor(new URL(url), env)?.href;

describe('proxyFor', () => {
  it('takes http_proxy for http and https_proxy for https, lower case before upper, with or without a scheme', () => {
    expect(via('http://api.example/v1', { http_proxy: 'http://proxy:3128', HTTP_PROXY: 'http://upper:1' })).toBe('http://proxy:3128/');
    expect(via('http://api.example/v1', { HTTP_PROXY: 'http://upper:1' })).toBe('http://upper:1/');
    expect(via('https://api.example/v1', { http_proxy: 'http://proxy:3128' })).toBeUndefined();
    expect(via('https://api.example/v1', { https_proxy: 'proxy:3129' })).toBe('http://proxy:3129/');
    expect(via('http://api.example/v1', {})).toBeUndefined();
    expect(via('http://api.example/v1', { http_proxy: '  ' })).toBeUndefined();
  });

  it('goes direct for a host no_proxy names: *, the host, its subdomains, a port', () => {
    const proxy = { http_proxy: 'http://proxy:3128', https_proxy: 'http://proxy:3128' };
    expect(via('http://api.example/', { ...proxy, no_proxy: '*' })).toBeUndefined();
    expect(via('http://api.example/', { ...proxy, no_proxy: 'localhost, api.example' })).toBeUndefined();
    expect(via('http://eu.api.example/', { ...proxy, no_proxy: '.api.example' })).toBeUndefined();
    expect(via('http://eu.api.example/', { ...proxy, NO_PROXY: 'api.example' })).toBeUndefined();
    expect(via('http://notapi.example/', { ...proxy, no_proxy: 'api.example' })).toBe('http://proxy:3128/');
    expect(via('http://127.0.0.1:8787/', { ...proxy, no_proxy: '127.0.0.1:8787' })).toBeUndefined();
    expect(via('http://127.0.0.1:9000/', { ...proxy, no_proxy: '127.0.0.1:8787' })).toBe('http://proxy:3128/');
    expect(via('https://api.example/', { ...proxy, no_proxy: 'api.example:443' })).toBeUndefined();
    expect(via('http://[::1]:8787/', { ...proxy, no_proxy: '::1' })).toBe('http://proxy:3128/');
    expect(via('http://[::1]:8787/', { ...proxy, no_proxy: '[::1]' })).toBeUndefined();
  });
});
