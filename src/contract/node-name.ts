// A name of a node among several on one host (docs/operations.md "Several nodes on one host"). One pattern for the
// node, where the name becomes a directory and part of unit names, and for the service, which shows it in the fleet.

/**
 * Lower case, a letter first, at most 31 characters: neither a path (no '/', no '..') nor able to smuggle anything
 * into a unit name (no '@', '.', '\\').
 */
export const NODE_NAME_PATTERN = /^[a-z][a-z0-9-]{0,30}$/;
