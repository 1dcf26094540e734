import type { Stack } from '@hearth/protocol';
import type { Command } from 'commander';
import { usageError } from '../errors.ts';
import { addExamples, STACK_EXAMPLES } from '../help-examples.ts';
import { formatFields } from '../output.ts';
import { STACK_NAME_PATTERN } from '../protocol-values.ts';
import { openSession, type CliDeps } from '../session.ts';

/** The `key: value` lines of a stack. */
export function stackFields(stack: Stack): Array<[string, unknown]> {
  return [
    ['id', stack.id],
    ['stack_name', stack.stack_name],
    ['project_id', stack.project_id],
    ['stack_status', stack.stack_status],
    ['arn', stack.arn],
    ['creation_time', stack.creation_time],
  ];
}

/** Checks a new stack's name as the server will (a letter, then letters, digits, `_`, `.`, `-`); throws a usage error. */
export function checkStackName(name: string): string {
  if (!STACK_NAME_PATTERN.test(name)) {
    throw usageError(
      `stack name ${JSON.stringify(name)} is not valid`,
      "start with a letter, then use letters, digits, '_', '.' or '-' (at most 255 characters)",
    );
  }
  return name;
}

/** Registers `hearth stack create|list|show|delete`. */
export function registerStackCommands(program: Command, deps: CliDeps): void {
  const stack = program.command('stack').description('create and manage stacks (namespaces for servers, deployments and wait conditions)');
  addExamples(stack, STACK_EXAMPLES);

  stack
    .command('create')
    .description('create a stack')
    .argument('<name>', "stack name: a letter, then letters, digits, '_', '.' or '-'")
    .action(async (name: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const created = await session.client().createStack({ stack_name: checkStackName(name) });
      session.out.result({ stack: created }, () => formatFields(stackFields(created)));
    });

  stack
    .command('list')
    .description('list stacks')
    .action(async (_flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const stacks = await session.client().listStacks();
      session.out.list<Stack>(
        { stacks },
        [
          { header: 'id', value: (s) => s.id },
          { header: 'name', value: (s) => s.stack_name },
          { header: 'status', value: (s) => s.stack_status },
          { header: 'created', value: (s) => s.creation_time },
        ],
        stacks,
        `no stacks in project ${session.options.project}`,
      );
    });

  stack
    .command('show')
    .description('show one stack')
    .argument('<name>', 'stack name or id')
    .action(async (name: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const found = await session.client().getStack(name);
      session.out.result({ stack: found }, () => formatFields(stackFields(found)));
    });

  stack
    .command('delete')
    .description('delete a stack and its wait conditions (refused while servers, deployments or scaling groups belong to it)')
    .argument('<name>', 'stack name or id')
    .action(async (name: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      await session.client().deleteStack(name);
      session.out.result({ deleted: true, id: name }, () => `deleted stack ${name}\n`);
    });
}
