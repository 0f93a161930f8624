// Plain HTTP against a running svc-api: what any client of the service would send.

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function httpRequest<T = any>(
  url: string,
  init: { method?: string; body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string>; token?: string } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...init.headers };
  let body: string | Buffer | undefined;
  if (init.rawBody !== undefined) body = init.rawBody;
  else if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  const response = await fetch(url, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body, redirect: 'manual' });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // not JSON: the test sees the text
  }
  return { status: response.status, headers: response.headers, body: parsed as T, text };
}

export function apiClient(baseUrl: string) {
  return {
    get: <T = any>(path: string, token?: string) => httpRequest<T>(`${baseUrl}${path}`, token === undefined ? {} : { token }),
    post: <T = any>(path: string, body?: unknown, options: { token?: string; headers?: Record<string, string> } = {}) =>
      httpRequest<T>(`${baseUrl}${path}`, { method: 'POST', body, ...options }),
  };
}
