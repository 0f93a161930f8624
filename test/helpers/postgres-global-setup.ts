// vitest global setup of the PostgreSQL project: one server for the whole run (each service gets a database of
// its own on it, test-engine.ts), stopped and removed at the end.
import type { TestProject } from 'vitest/node';
import { startPostgresServer } from './postgres-server.js';

export default async function setup(project: TestProject): Promise<() => void> {
  const server = await startPostgresServer();
  project.provide('postgresAdminUrl', server.adminUrl);
  return () => server.stop();
}
