// The UUID form of the ids the service makes (sessions, nodes, runs), as a JSON Schema pattern: a module of its own
// so a command that checks an id before it calls the service does not load the schemas' library with --help.
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
