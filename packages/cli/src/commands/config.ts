import type { SoftwareConfig, SoftwareConfigSummary } from '@hearth/protocol';
import type { Command } from 'commander';
import { buildConfigCreate, type ConfigCreateFlags } from '../config-definition.ts';
import { collect, parseId, parseLimit } from '../flag-values.ts';
import { addExamples, CONFIG_CREATE_EXAMPLES, CONFIG_EXAMPLES } from '../help-examples.ts';
import { displayValue, formatFields } from '../output.ts';
import { openSession, type CliDeps } from '../session.ts';

/** The `key: value` lines of a config; inputs, outputs and the body each get lines of their own. */
export function configFields(config: SoftwareConfig): Array<[string, unknown]> {
  const inputs = config.inputs
    .map((i) => `${i.name} (${i.type})${i.default === undefined ? '' : ` default ${displayValue(i.default)}`}`)
    .join('\n');
  const outputs = config.outputs.map((o) => `${o.name} (${o.type})${o.error_output ? ' error output' : ''}`).join('\n');
  const multiline = (text: string): string => (text === '' ? '-' : text.endsWith('\n') ? text : `${text}\n`);
  return [
    ['id', config.id],
    ['name', config.name],
    ['group', config.group],
    ['creation_time', config.creation_time],
    ['inputs', multiline(inputs)],
    ['outputs', multiline(outputs)],
    ['options', config.options],
    ['config', typeof config.config === 'string' ? multiline(config.config) : config.config],
  ];
}

/** Registers `hearth config create|list|show|delete`. */
export function registerConfigCommands(program: Command, deps: CliDeps): void {
  const config = program.command('config').description('create and manage software configs (what to run on a server)');
  addExamples(config, CONFIG_EXAMPLES);

  const create = config
    .command('create')
    .description('create a software config')
    .argument('<name>', 'config name')
    .requiredOption('--group <group>', 'hook that runs it on the server, e.g. script, ansible, puppet')
    .option('--config <text>', 'the config body (script text)')
    .option('--config-file <file>', 'read the config body from a file')
    .option('--definition-file <file>', 'JSON or YAML with inputs, outputs and options (as Heat reads it)')
    .option('--input <name[=default]>', 'declare an input, with an optional default (repeatable)', collect)
    .option('--input-type <name=type>', 'type of an input: String, Number, CommaDelimitedList, Json, Boolean (repeatable)', collect)
    .option('--output <name>', 'declare an output (repeatable)', collect)
    .option('--error-output <name>', 'declare an output that fails the deployment when set (repeatable)', collect)
    .option('--options-file <file>', 'JSON or YAML mapping of options for the hook')
    .action(async (name: string, flags: ConfigCreateFlags, cmd: Command) => {
      const session = openSession(cmd, deps);
      const body = await buildConfigCreate(name, flags, session.io.readTextFile);
      const created = await session.client().createConfig(body);
      session.out.result({ software_config: created }, () => formatFields(configFields(created)));
    });
  addExamples(create, CONFIG_CREATE_EXAMPLES);

  config
    .command('list')
    .description('list software configs')
    .option('--limit <n>', 'at most this many (default: all)')
    .option('--marker <id>', 'start after this config id')
    .action(async (flags: { limit?: string; marker?: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const limit = flags.limit === undefined ? undefined : parseLimit(flags.limit, '--limit');
      const configs = await session.client().listConfigs({ limit, marker: flags.marker });
      const after = flags.marker === undefined ? '' : ` after config ${flags.marker}`;
      session.out.list<SoftwareConfigSummary>(
        { software_configs: configs },
        [
          { header: 'id', value: (c) => c.id },
          { header: 'name', value: (c) => c.name },
          { header: 'group', value: (c) => c.group },
          { header: 'created', value: (c) => c.creation_time },
        ],
        configs,
        `no software configs in project ${session.options.project}${after}`,
      );
    });

  config
    .command('show')
    .description('show one software config with its body')
    .argument('<id>', 'config id')
    .action(async (id: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const configId = parseId(id, 'config');
      const found = await session.client().getConfig(configId);
      session.out.result({ software_config: found }, () => formatFields(configFields(found)));
    });

  config
    .command('delete')
    .description('delete a software config (fails while deployments use it)')
    .argument('<id>', 'config id')
    .action(async (id: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const configId = parseId(id, 'config');
      await session.client().deleteConfig(configId);
      session.out.result({ deleted: true, id }, () => `deleted config ${id}\n`);
    });
}
