// The OpenAPI document as a client generator or a validating proxy reads it (docs/api.md "Operations";
// docs/operations.md "The OpenAPI document"): fetched from a real svc-api at GET /openapi.json and linted with
// redocly's recommended rules; each operation named once; every code the service answers with in the Problem's enum
// and in docs/api.md; and the `limit` of every listing refused alike outside the range the document declares
// (docs/api.md "Conventions").
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/contract/errors.js';
import { OPERATIONS } from '../../src/api/ops/openapi-operations.js';
import { httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';
import { mintToken } from '../helpers/tokens.js';

interface Parameter {
  name: string;
  in: string;
  description?: string;
  schema?: { pattern?: string };
}
interface Operation {
  operationId?: string;
  summary?: string;
  parameters?: Parameter[];
  responses: Record<string, { content?: Record<string, unknown> }>;
}
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: { Problem: { properties: { code: { enum: string[] } } } } };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

describe('the OpenAPI document', () => {
  // The sandbox's instance: its document holds every route, the sandbox's included.
  const service = useSvcApi();

  async function fetchDocument(): Promise<{ text: string; document: OpenApiDocument }> {
    const response = await httpRequest(`${service.baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    return { text: response.text, document: JSON.parse(response.text) as OpenApiDocument };
  }

  function operationsOf(document: OpenApiDocument): Array<{ method: string; path: string; operation: Operation }> {
    return Object.entries(document.paths).flatMap(([path, item]) =>
      METHODS.filter((method) => item[method] !== undefined).map((method) => ({ method, path, operation: item[method]! })),
    );
  }

  it('passes redocly lint with its recommended rules: no error, no warning', async () => {
    const { text } = await fetchDocument();
    const config = await createConfig({
      extends: ['recommended'],
      rules: {
        // The licence is the operator's terms of service, not part of the API: this document describes whichever
        // instance serves it, and the package is UNLICENSED.
        'info-license': 'off',
        // `servers` names the instance's SVC_PUBLIC_URL, which an operator may well set to a host under example.com
        // (a staging name, the docs' own examples): where it runs, not what the API is.
        'no-server-example.com': 'off',
      },
    });
    const problems = await lintFromString({ source: text, absoluteRef: `${service.baseUrl}/openapi.json`, config });
    const found = problems.map(({ severity, ruleId, message, location }) => `${severity} ${ruleId}: ${message} (${location[0]?.pointer})`);
    expect(found).toEqual([]);
  });

  it('names each operation once: a unique operationId a generator can use, and a summary of its own', async () => {
    const { document } = await fetchDocument();
    const operations = operationsOf(document);
    expect(operations.length).toBeGreaterThan(80);
    const ids = operations.map(({ operation }) => operation.operationId);
    expect(ids.filter((id) => id === undefined || !/^[a-z][A-Za-z0-9]*$/.test(id))).toEqual([]);
    expect(ids.filter((id, index) => ids.indexOf(id) !== index)).toEqual([]);
    // Each written in src/api/ops/openapi-operations.ts, not the name made up from the path for a route missing there;
    // and nothing is written there for a route that no longer exists.
    const keys = operations.map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    expect(keys.filter((key) => OPERATIONS[key] === undefined)).toEqual([]);
    expect(Object.keys(OPERATIONS).filter((key) => !keys.includes(key))).toEqual([]);
  });

  it('declares every code the service answers with in the Problem enum, and docs/api.md lists each with its status', async () => {
    const { document } = await fetchDocument();
    const answered = Object.entries(ERROR_CODES).filter(([, info]) => info.status !== null);
    expect([...document.components.schemas.Problem.properties.code.enum].sort()).toEqual(answered.map(([code]) => code).sort());

    const apiMd = readFileSync(fileURLToPath(new URL('../../docs/api.md', import.meta.url)), 'utf8');
    const table = apiMd.slice(apiMd.indexOf('## Error codes'), apiMd.indexOf('\n## ', apiMd.indexOf('## Error codes') + 1));
    const listed = [...table.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((row) => `${row[1]} ${row[2]}`);
    expect(answered.map(([code, info]) => `${code} ${info.status}`).filter((row) => !listed.includes(row))).toEqual([]);
  });

  it('answers its errors as problem details with the shared Problem schema, and the wallet pages as HTML', async () => {
    const { document } = await fetchDocument();
    const wrong = operationsOf(document).flatMap(({ method, path, operation }) =>
      Object.entries(operation.responses)
        .filter(([status]) => status === 'default' || Number(status) >= 400)
        .filter(([status, response]) => {
          const expected = path.startsWith('/wallet') && status !== '431' ? 'text/html' : 'application/problem+json';
          const schema = (response.content?.[expected] as { schema?: { $ref?: string } } | undefined)?.schema;
          return schema === undefined || (expected !== 'text/html' && schema.$ref !== '#/components/schemas/Problem');
        })
        .map(([status]) => `${method.toUpperCase()} ${path} ${status}`),
    );
    expect(wrong).toEqual([]);
  });
});

describe('a limit outside its documented range', () => {
  const service = useSvcApi();

  it('is refused 400 invalid_request on every operation that takes one, and its documented most is taken', async () => {
    const { token } = await mintToken(service, uniqueEmail('limits'));
    const document = (await httpRequest<OpenApiDocument>(`${service.baseUrl}/openapi.json`)).body;
    const listings = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([method, operation]) => {
        const limit = operation.parameters?.find((parameter) => parameter.in === 'query' && parameter.name === 'limit');
        return limit === undefined ? [] : [{ method, path, limit }];
      }),
    );
    // Every listing of the service with a page: the search above found them all.
    expect(listings.map(({ method, path }) => `${method.toUpperCase()} ${path}`).sort()).toEqual([
      'GET /sandbox/mail',
      'GET /v1/audit',
      'GET /v1/swarm/runs',
      'GET /v1/swarm/runs/{run_id}/logs',
      'GET /v1/swarm/webhooks/{endpoint_id}/deliveries',
    ]);

    for (const { path, limit } of listings) {
      const range = /\b1 to (\d+)\b/.exec(limit.description ?? '');
      expect(range, `${path}: the document gives the range of limit`).not.toBeNull();
      const most = Number(range![1]);
      // Ids of nothing: the query is judged before the resource is looked up, and the most allowed then finds none.
      const target = path.replace(/\{[a-z_]+\}/g, 'absent-id');
      const query = (value: string) => `${target}?${path === '/sandbox/mail' ? 'to=nobody%40example.com&' : ''}limit=${value}`;
      for (const value of ['5000', String(most + 1), '0', '-1', '01', 'ten']) {
        const refused = await httpRequest(`${service.baseUrl}${query(value)}`, { token });
        const answer = [refused.status, refused.body?.code, refused.body?.errors?.[0]?.path];
        expect(answer, `${path} limit=${value}`).toEqual([400, 'invalid_request', '/limit']);
      }
      const taken = await httpRequest(`${service.baseUrl}${query(String(most))}`, { token });
      const found = taken.status === 200 || taken.body?.code === 'run_not_found' || taken.body?.code === 'not_found';
      expect(found, `${path} limit=${most}: ${taken.status} ${taken.text}`).toBe(true);
    }
  });
});
