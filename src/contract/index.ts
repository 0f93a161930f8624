export * from './agents.js';
export * from './claims.js';
export * from './errors.js';
export * from './money.js';
export * from './schemas.js';
export * from './tiers.js';
export * from './email.js';
export * from './node-protocol.js';
