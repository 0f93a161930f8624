// A user's secrets (docs/api.md "Secrets"): named values the service keeps encrypted, handed to the node with each
// run of an agent that declares them in agent.json, and given to the agent as environment variables of the same
// name. The names' rules live here, read by the service (which stores them), the manifest check (which an agent
// declares them in) and the node (which sets them in the agent's environment, and checks them again).
import { Type, type Static } from '@sinclair/typebox';
import { MAX_SECRET_VALUE_BYTES, SECRET_NAME_PATTERN } from './secret-names.js';
export * from './secret-names.js';

const Timestamp = Type.String({ description: 'ISO 8601, UTC' });

export const SecretParams = Type.Object({ name: Type.String({ maxLength: 128 }) });
export type SecretParams = Static<typeof SecretParams>;

// PUT /v1/swarm/secrets/{name}
export const SecretRequest = Type.Object({ value: Type.String({ maxLength: MAX_SECRET_VALUE_BYTES }) }, { additionalProperties: false });
export type SecretRequest = Static<typeof SecretRequest>;

/** A secret as the API shows it: never its value. */
export const SecretSummary = Type.Object({ name: Type.String(), created_at: Timestamp, updated_at: Timestamp });
export type SecretSummary = Static<typeof SecretSummary>;
export const SecretWritten = Type.Composite([SecretSummary, Type.Object({ created: Type.Boolean() })]);
export type SecretWritten = Static<typeof SecretWritten>;
export const SecretsResponse = Type.Object({ secrets: Type.Array(SecretSummary) });
export type SecretsResponse = Static<typeof SecretsResponse>;
export const SecretRemoved = Type.Object({ name: Type.String(), removed: Type.Literal(true) });
export type SecretRemoved = Static<typeof SecretRemoved>;

/** What the node is handed with a run: the values of the names its agent declares that the user has. */
export const RunSecrets = Type.Record(Type.String({ pattern: SECRET_NAME_PATTERN }), Type.String());
export type RunSecrets = Static<typeof RunSecrets>;
