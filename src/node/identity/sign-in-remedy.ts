// The sign-in command a remedy names (docs/api.md "The node's client: decisions"): a command that works as printed,
// so it names the address when one is known (the stored token's, the node's user) and otherwise `swarm-node login`
// alone, which asks for the address in a terminal.
export function loginCommandFor(email: string | undefined): string {
  return email === undefined ? 'swarm-node login' : `swarm-node login --email ${email}`;
}
