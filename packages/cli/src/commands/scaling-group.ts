import type { ScalingGroup, ScalingGroupCreate, ScalingGroupUpdate, ScalingMember } from '@hearth/protocol';
import type { Command } from 'commander';
import { usageError } from '../errors.ts';
import { collect, parseChoice, parseHttpUrl, parseSeconds } from '../flag-values.ts';
import { formatFields, type Column } from '../output.ts';
import { CONFIG_TRANSPORTS } from '../protocol-values.ts';
import { addExamples, SCALING_GROUP_EXAMPLES } from '../help-examples.ts';
import { openSession, type CliDeps } from '../session.ts';
import { checkScalingName, MAX_SCALING_COOLDOWN, MAX_SCALING_GROUP_SIZE, parseInteger, scalingClient } from './scaling-client.ts';

/** The flags of `scaling-group create` (commander hands values over as text). */
export interface ScalingGroupCreateFlags {
  stack: string;
  minSize: string;
  maxSize: string;
  desiredCapacity?: string | undefined;
  cooldown?: string | undefined;
  actuatorUrl: string;
  actuatorSecret?: string | undefined;
  memberBootstrap?: boolean | undefined;
  bootstrapTransport?: string | undefined;
}

/** The flags of `scaling-group update`. */
export interface ScalingGroupUpdateFlags {
  stack: string;
  minSize?: string | undefined;
  maxSize?: string | undefined;
  desiredCapacity?: string | undefined;
  cooldown?: string | undefined;
  actuatorUrl?: string | undefined;
  actuatorSecret?: string | undefined;
}

const size = (text: string, flag: string) => parseInteger(text, flag, 0, MAX_SCALING_GROUP_SIZE);
/** A cooldown of 0 is allowed (parseSeconds starts at 1). */
const cooldown = (text: string) => (text.trim() === '0' ? 0 : parseSeconds(text, '--cooldown', MAX_SCALING_COOLDOWN));

/** Checks an --actuator-url as the server will (http(s), no user or password); returns it. */
function actuatorUrl(url: string): string {
  parseHttpUrl(url, '--actuator-url', 'https://provisioner.example/hook');
  const { username, password } = new URL(url);
  if (username !== '' || password !== '') {
    throw usageError('--actuator-url must not carry a user or password', 'hearth signs each webhook with --actuator-secret instead');
  }
  return url;
}

/** Turns `scaling-group create` flags into the POST .../scaling_groups body; checks max ≥ min as the server will. */
export function buildScalingGroupCreate(name: string, flags: ScalingGroupCreateFlags): ScalingGroupCreate {
  const body: ScalingGroupCreate = {
    name: checkScalingName('scaling group', name),
    min_size: size(flags.minSize, '--min-size'),
    max_size: size(flags.maxSize, '--max-size'),
    actuator: { url: flags.actuatorUrl },
  };
  if (body.max_size < body.min_size) throw usageError(`--max-size ${body.max_size} is smaller than --min-size ${body.min_size}`);
  actuatorUrl(flags.actuatorUrl);
  if (flags.actuatorSecret !== undefined) body.actuator.secret = flags.actuatorSecret;
  if (flags.desiredCapacity !== undefined) body.desired_capacity = size(flags.desiredCapacity, '--desired-capacity');
  if (flags.cooldown !== undefined) body.cooldown = cooldown(flags.cooldown);
  if (flags.bootstrapTransport !== undefined)
    body.member_bootstrap = {
      software_config_transport: parseChoice(flags.bootstrapTransport, '--bootstrap-transport', CONFIG_TRANSPORTS),
    };
  else if (flags.memberBootstrap) body.member_bootstrap = {};
  return body;
}

/** Turns `scaling-group update` flags into the PATCH body; at least one flag is needed. */
export function buildScalingGroupUpdate(flags: ScalingGroupUpdateFlags): ScalingGroupUpdate {
  const body: ScalingGroupUpdate = {};
  if (flags.minSize !== undefined) body.min_size = size(flags.minSize, '--min-size');
  if (flags.maxSize !== undefined) body.max_size = size(flags.maxSize, '--max-size');
  if (flags.desiredCapacity !== undefined) body.desired_capacity = size(flags.desiredCapacity, '--desired-capacity');
  if (flags.cooldown !== undefined) body.cooldown = cooldown(flags.cooldown);
  if (flags.actuatorUrl !== undefined || flags.actuatorSecret !== undefined) {
    body.actuator = {};
    if (flags.actuatorUrl !== undefined) body.actuator.url = actuatorUrl(flags.actuatorUrl);
    if (flags.actuatorSecret !== undefined) body.actuator.secret = flags.actuatorSecret;
  }
  if (Object.keys(body).length === 0)
    throw usageError(
      'nothing to update',
      'give --min-size, --max-size, --desired-capacity, --cooldown, --actuator-url or --actuator-secret',
    );
  return body;
}

/** Human text of one group: its fields, then its members. */
export function formatScalingGroup(group: ScalingGroup): string {
  const d = group.deliveries;
  return formatFields([
    ['name', group.name],
    ['stack_name', group.stack_name],
    ['size', `${group.current_size} member(s), desired ${group.desired_capacity} in [${group.min_size}, ${group.max_size}]`],
    ['cooldown', group.cooldown],
    ['cooldown_end', group.cooldown_end === null ? null : `${group.cooldown_end} (${group.cooldown_reason ?? ''})`],
    ['scaling_in_progress', group.scaling_in_progress],
    ['last_activity', group.last_activity === null ? null : `${group.last_activity.time} ${group.last_activity.reason}`],
    ['actuator', group.actuator.url],
    ['deliveries', `${d.pending} pending (${d.failed} failing), ${d.delivered} delivered`],
    [
      'undelivered_members',
      d.undelivered_members === 0
        ? 0
        : `${d.undelivered_members} (no delivery carried their credentials yet: the next that succeeds will; ` +
          `a new --actuator-url sends one now)`,
    ],
    ['last_delivery_error', d.last_error],
    ['member_bootstrap', group.member_bootstrap],
    ['members', group.members.length === 0 ? '-' : group.members.map((m) => m.server_id).join(', ')],
    ['id', group.id],
  ]);
}

/** Columns of the members table. */
const MEMBER_COLUMNS: ReadonlyArray<Column<ScalingMember>> = [
  { header: 'server_id', value: (m) => m.server_id },
  { header: 'bootstrap', value: (m) => m.bootstrap },
  { header: 'added', value: (m) => m.added_time },
];

/** Registers `hearth scaling-group create|show|list|update|delete|members`. */
export function registerScalingGroupCommands(program: Command, deps: CliDeps): void {
  const group = program
    .command('scaling-group')
    .description('scaling groups: bounds and desired capacity, told to a provisioner (the actuator) by a signed webhook');
  addExamples(group, SCALING_GROUP_EXAMPLES);

  group
    .command('create')
    .description('create a scaling group; its initial capacity (desired, else min) is the first webhook')
    .argument('<name>', "group name: letters, digits, '_', '.', ':' or '-'")
    .requiredOption('--stack <stack>', 'stack name or id')
    .requiredOption('--min-size <n>', `smallest size (0-${MAX_SCALING_GROUP_SIZE})`)
    .requiredOption('--max-size <n>', 'largest size (at least --min-size)')
    .requiredOption('--actuator-url <url>', 'where hearth POSTs each change of desired capacity')
    .option(
      '--actuator-secret <secret>',
      'HMAC secret of the webhook signature (16+ characters; default: hearth makes one and prints it once)',
    )
    .option('--desired-capacity <n>', 'initial desired capacity (default --min-size)')
    .option('--cooldown <seconds>', 'seconds after a change during which policies change nothing (default 0)')
    .option('--member-bootstrap', 'create server records for new members and put their agent credentials in the webhook')
    .option(
      '--bootstrap-transport <transport>',
      `with --member-bootstrap: the members' metadata transport (${CONFIG_TRANSPORTS.join(', ')})`,
    )
    .action(async (name: string, flags: ScalingGroupCreateFlags, cmd: Command) => {
      const session = openSession(cmd, deps);
      const created = await scalingClient(session).createScalingGroup(flags.stack, buildScalingGroupCreate(name, flags));
      session.out.result(created, () => {
        const secret =
          created.actuator_secret === null ? '' : `actuator_secret: ${created.actuator_secret}  (shown once: give it to the provisioner)\n`;
        return formatScalingGroup(created.scaling_group) + secret;
      });
    });

  group
    .command('list')
    .description("list a stack's scaling groups")
    .requiredOption('--stack <stack>', 'stack name or id')
    .action(async (flags: { stack: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const groups = await scalingClient(session).listScalingGroups(flags.stack);
      session.out.list<ScalingGroup>(
        { scaling_groups: groups },
        [
          { header: 'name', value: (g) => g.name },
          { header: 'desired', value: (g) => g.desired_capacity },
          { header: 'members', value: (g) => g.current_size },
          { header: 'bounds', value: (g) => `${g.min_size}-${g.max_size}` },
          { header: 'pending', value: (g) => g.deliveries.pending },
          { header: 'undelivered', value: (g) => g.deliveries.undelivered_members },
          { header: 'cooldown_end', value: (g) => g.cooldown_end },
        ],
        groups,
        `no scaling groups in stack ${flags.stack}`,
      );
    });

  group
    .command('show')
    .description('show one scaling group: size, cooldown, members, actuator deliveries')
    .argument('<name>', 'group name')
    .requiredOption('--stack <stack>', 'stack name or id')
    .action(async (name: string, flags: { stack: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const found = await scalingClient(session).getScalingGroup(flags.stack, name);
      session.out.result({ scaling_group: found }, () => formatScalingGroup(found));
    });

  group
    .command('update')
    .description('new bounds, cooldown or desired capacity (clamped to the bounds), or a new actuator; a change goes to the actuator')
    .argument('<name>', 'group name')
    .requiredOption('--stack <stack>', 'stack name or id')
    .option('--min-size <n>', 'new smallest size')
    .option('--max-size <n>', 'new largest size')
    .option('--desired-capacity <n>', 'new desired capacity (within the bounds)')
    .option('--cooldown <seconds>', 'new cooldown')
    .option('--actuator-url <url>', 'new actuator URL (undelivered members are sent to it at once)')
    .option('--actuator-secret <secret>', 'new HMAC secret of the webhook signature (16+ characters)')
    .action(async (name: string, flags: ScalingGroupUpdateFlags, cmd: Command) => {
      const session = openSession(cmd, deps);
      const updated = await scalingClient(session).updateScalingGroup(flags.stack, name, buildScalingGroupUpdate(flags));
      session.out.result({ scaling_group: updated }, () => formatScalingGroup(updated));
    });

  group
    .command('delete')
    .description('delete a scaling group (delete its policies first); undelivered webhooks are dropped')
    .argument('<name>', 'group name')
    .requiredOption('--stack <stack>', 'stack name or id')
    .action(async (name: string, flags: { stack: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      await scalingClient(session).deleteScalingGroup(flags.stack, name);
      session.out.result({ deleted: true, stack: flags.stack, name }, () => `deleted scaling group ${name} of stack ${flags.stack}\n`);
    });

  group
    .command('members')
    .description('list the members, or add and remove them (server ids) as the provisioner created or deleted them')
    .argument('<name>', 'group name')
    .requiredOption('--stack <stack>', 'stack name or id')
    .option('--add <server-id>', 'add a member (repeatable)', collect)
    .option('--remove <server-id>', 'remove a member (repeatable)', collect)
    .action(async (name: string, flags: { stack: string; add?: string[]; remove?: string[] }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const client = scalingClient(session);
      if (flags.add !== undefined || flags.remove !== undefined) {
        await client.changeScalingMembers(flags.stack, name, {
          ...(flags.add ? { add: flags.add } : {}),
          ...(flags.remove ? { remove: flags.remove } : {}),
        });
      }
      const members = await client.listScalingMembers(flags.stack, name);
      session.out.list({ members }, MEMBER_COLUMNS, members, `scaling group ${name} of stack ${flags.stack} has no members`);
    });
}
