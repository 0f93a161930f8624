// STUB: the CLI of issue 3 replaces this.
process.stdout.write('swarm-node: not yet implemented\n');
