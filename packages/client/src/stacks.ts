import type { Stack, StackCreate } from '@hearth/protocol';
import type { Transport } from './http.ts';
import { projectPath } from './paths.ts';
import { callForField } from './reply.ts';

/** Operator calls on stacks (namespaces of servers, deployments and wait conditions). */
export interface StackMethods {
  /** Creates a stack; fails with ERR_STACK_EXISTS when the name is taken. */
  createStack(body: StackCreate): Promise<Stack>;
  /** Lists the project's stacks. */
  listStacks(): Promise<Stack[]>;
  /** Fetches one stack by name or id (the server redirects `/stacks/{name}` to `/stacks/{name}/{id}`). */
  getStack(nameOrId: string): Promise<Stack>;
  /** Deletes a stack and its wait conditions; fails with ERR_STACK_NOT_EMPTY while servers or deployments belong to it. */
  deleteStack(nameOrId: string): Promise<void>;
}

/** Builds the stack methods on a transport. */
export function stackMethods(transport: Transport): StackMethods {
  const { project } = transport.options;
  const path = (...rest: string[]): string => projectPath(project, 'stacks', ...rest);
  return {
    createStack: (body) => callForField<Stack>(transport, { method: 'POST', path: path(), auth: 'operator', json: body }, 'stack'),
    listStacks: () => callForField<Stack[]>(transport, { method: 'GET', path: path(), auth: 'operator' }, 'stacks'),
    getStack: (nameOrId) => callForField<Stack>(transport, { method: 'GET', path: path(nameOrId), auth: 'operator' }, 'stack'),
    async deleteStack(nameOrId) {
      await transport.call({ method: 'DELETE', path: path(nameOrId), auth: 'operator' });
    },
  };
}
