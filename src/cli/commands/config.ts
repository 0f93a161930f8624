// swarm-node config get|set: the node's config file, and where each value in force comes from.
import { Command } from 'commander';
import { CONFIG_KEYS, configKey, setConfigValue } from '../../node/host/config.js';
import { contextFor } from '../context.js';

const KEY_WIDTH = Math.max(...CONFIG_KEYS.map((key) => key.length)) + 1;

export function configCommand(): Command {
  const config = new Command('config').description('show or change the node configuration').addHelpText(
    'after',
    `
Values come from flags, then the environment (SVC_BASE_URL, SVC_WALLET_URL, SVC_MERCHANT_ID), then the config
file, then defaults; \`config get\` says which.

Example:
  $ swarm-node config get
  $ swarm-node config set base_url https://api.svc.example`,
  );

  config
    .command('get')
    .description('show one key, or every key with its source (flag, env, file, default)')
    .argument('[key]', `one of: ${CONFIG_KEYS.join(', ')}`)
    .addHelpText('after', '\nExample:\n  $ swarm-node config get\n  $ swarm-node config get base_url')
    .action(async (key: string | undefined, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const resolved = ctx.config();
      const entries = CONFIG_KEYS.map((name) => ({ key: name, value: resolved[name], source: resolved.sources[name] }));
      if (key === undefined) {
        ctx.output.result(
          { config: Object.fromEntries(entries.map((e) => [e.key, e.value])), sources: resolved.sources, file: ctx.paths.configFile },
          (_data, style) => entries.map((e) => `${e.key.padEnd(KEY_WIDTH)} ${String(e.value)}  ${style.dim(`(${e.source})`)}`).join('\n'),
        );
        return;
      }
      const entry = entries.find((e) => e.key === configKey(key))!;
      ctx.output.result({ key, value: entry.value, source: entry.source }, () => String(entry.value));
    });

  config
    .command('set')
    .description('write a key into the node config file')
    .argument('<key>', `one of: ${CONFIG_KEYS.join(', ')}`)
    .argument('<value>')
    .addHelpText('after', '\nExample:\n  $ swarm-node config set base_url https://api.svc.example')
    .action(async (key: string, value: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const written = setConfigValue(ctx.paths.configFile, key, value);
      ctx.output.result({ ...written, file: ctx.paths.configFile }, (r) => `${r.key} = ${r.value}`);
    });

  return config;
}
