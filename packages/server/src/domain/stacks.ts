import { randomUUID } from 'node:crypto';
import { heatTime, stackArn, type Stack } from '@hearth/protocol';
import type { Transaction } from 'kysely';
import type { Store } from '../store/store.ts';
import type { Database, StackRow } from '../store/schema.ts';
import { HearthError } from './errors.ts';
import { resourceEvent } from './events.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Where a resource sits: a stack, or its own pseudo-stack (servers/{id}, deployments/{id}). */
export interface Placement {
  stack_id: string | null;
  stack_name: string;
  resource_name: string;
}

/** The pseudo-stack of a resource created outside any stack: `{kind}s/{id}`, resource `{kind}`. */
export function pseudoPlacement(kind: 'server' | 'deployment'): Placement {
  return { stack_id: null, stack_name: `${kind}s`, resource_name: kind };
}

/** A placement as stored on a server or deployment row (the pseudo-stack id is the row's own id). */
export function placementOf(
  row: { id: string; stack_id: string | null; stack_name: string | null; resource_name: string | null },
  kind: 'server' | 'deployment',
): {
  stackId: string;
  stackName: string;
  resourceName: string;
} {
  const pseudo = pseudoPlacement(kind);
  return {
    stackId: row.stack_id ?? row.id,
    stackName: row.stack_name ?? pseudo.stack_name,
    resourceName: row.resource_name ?? pseudo.resource_name,
  };
}

/** Stacks: namespaces for resources (servers, deployments, wait conditions), with Heat's ids and ARNs. */
export class StackService {
  constructor(
    private readonly store: Store,
    private readonly publicUrl: string,
  ) {}

  /** Creates a stack; its name is unique in the project. */
  async create(projectId: string, name: string): Promise<Stack> {
    const row = await this.store.write(async ({ trx, now, event }) => {
      const existing = await trx
        .selectFrom('stacks')
        .select('id')
        .where('project_id', '=', projectId)
        .where('name', '=', name)
        .executeTakeFirst();
      if (existing) throw new HearthError('ERR_STACK_EXISTS', { name });
      const values: StackRow = { id: randomUUID(), project_id: projectId, name, created_at: now };
      await trx.insertInto('stacks').values(values).execute();
      event(
        resourceEvent(
          { project_id: projectId, resource_type: 'stack', resource_id: values.id, server_id: null },
          'stack.created',
          `Stack ${name} created`,
        ),
      );
      return values;
    });
    return this.toApi(row);
  }

  /**
   * A project's stacks by name: all of them, or at most `limit`, after the stack `marker` (its id or
   * name; one not in the project is ERR_STACK_NOT_FOUND). heatclient pages `stack list --limit` by
   * marker until it has `limit` stacks, so an ignored marker would list the same stacks again.
   */
  async list(projectId: string, limit?: number, marker?: string): Promise<Stack[]> {
    let query = this.store.reader.selectFrom('stacks').selectAll().where('project_id', '=', projectId);
    if (marker !== undefined) query = query.where('name', '>', (await this.resolve(projectId, marker)).name);
    if (limit !== undefined) query = query.limit(limit);
    const rows = await query.orderBy('name').execute();
    return rows.map((r) => this.toApi(r));
  }

  /**
   * Finds a stack by name or id (Heat tries uuid-like names as ids first), or throws ERR_STACK_NOT_FOUND.
   * Reads through `db`, default the reader; a write passes its transaction to see the stack as it commits.
   */
  async resolve(projectId: string, nameOrId: string, db: Pick<Store['reader'], 'selectFrom'> = this.store.reader): Promise<StackRow> {
    const base = db.selectFrom('stacks').selectAll().where('project_id', '=', projectId);
    const row =
      (UUID.test(nameOrId) ? await base.where('id', '=', nameOrId).executeTakeFirst() : undefined) ??
      (await base.where('name', '=', nameOrId).executeTakeFirst());
    if (!row) throw new HearthError('ERR_STACK_NOT_FOUND', { stack: nameOrId });
    return row;
  }

  /**
   * Finds a stack by name and id together (the `stacks/{name}/{id}` form), or throws. The id must
   * be the stack's id: `resolve` also takes a name, and `stacks/web/web` is not a stack (Heat 404s).
   */
  async resolveExact(projectId: string, name: string, id: string): Promise<StackRow> {
    const row = await this.resolve(projectId, id);
    if (row.name !== name || row.id !== id) throw new HearthError('ERR_STACK_NOT_FOUND', { stack: `${name}/${id}` });
    return row;
  }

  /** Deletes a stack and its wait conditions (revoking their URLs); refuses while servers or deployments are in it. */
  async delete(projectId: string, nameOrId: string): Promise<void> {
    await this.store.write(async ({ trx, event, publish }) => {
      // Resolved in the transaction, as deployment and wait-condition creates resolve theirs: one
      // created meanwhile is either counted below or finds the stack gone (a coded 404).
      const stack = await this.resolve(projectId, nameOrId, trx);
      const servers = await trx.selectFrom('servers').select('id').where('stack_id', '=', stack.id).execute();
      const deployments = await trx.selectFrom('software_deployments').select('id').where('stack_id', '=', stack.id).execute();
      const groups = await trx.selectFrom('scaling_groups').select('id').where('stack_id', '=', stack.id).execute();
      const count = servers.length + deployments.length + groups.length;
      if (count > 0) throw new HearthError('ERR_STACK_NOT_EMPTY', { stack: stack.name, count });
      const conditions = await trx.selectFrom('wait_conditions').select(['id', 'access_key_id']).where('stack_id', '=', stack.id).execute();
      for (const condition of conditions) {
        await trx.deleteFrom('wait_condition_signals').where('wait_condition_id', '=', condition.id).execute();
        await trx.deleteFrom('resource_credentials').where('access_key_id', '=', condition.access_key_id).execute();
        publish(`wait-condition:${condition.id}`);
      }
      await trx.deleteFrom('wait_conditions').where('stack_id', '=', stack.id).execute();
      await trx.deleteFrom('stacks').where('id', '=', stack.id).execute();
      event(
        resourceEvent(
          { project_id: projectId, resource_type: 'stack', resource_id: stack.id, server_id: null },
          'stack.deleted',
          `Stack ${stack.name} deleted with ${conditions.length} wait condition(s)`,
        ),
      );
    });
  }

  /** Throws ERR_RESOURCE_EXISTS if a resource of that name is already in the stack. Run inside the creating transaction. */
  async assertNameFree(trx: Transaction<Database>, stack: StackRow, name: string): Promise<void> {
    const taken =
      (await trx
        .selectFrom('servers')
        .select('id')
        .where('stack_id', '=', stack.id)
        .where('resource_name', '=', name)
        .executeTakeFirst()) ??
      (await trx
        .selectFrom('software_deployments')
        .select('id')
        .where('stack_id', '=', stack.id)
        .where('resource_name', '=', name)
        .executeTakeFirst()) ??
      (await trx.selectFrom('wait_conditions').select('id').where('stack_id', '=', stack.id).where('name', '=', name).executeTakeFirst()) ??
      (await trx.selectFrom('scaling_groups').select('id').where('stack_id', '=', stack.id).where('name', '=', name).executeTakeFirst()) ??
      (await trx.selectFrom('scaling_policies').select('id').where('stack_id', '=', stack.id).where('name', '=', name).executeTakeFirst());
    if (taken) throw new HearthError('ERR_RESOURCE_EXISTS', { stack: stack.name, name });
  }

  /** The native API shape of a stack. */
  toApi(row: StackRow): Stack {
    return {
      id: row.id,
      stack_name: row.name,
      project_id: row.project_id,
      arn: stackArn(row.project_id, row.name, row.id),
      stack_status: 'CREATE_COMPLETE',
      creation_time: heatTime(new Date(row.created_at)),
      links: [{ href: `${this.publicUrl}/v1/${row.project_id}/stacks/${row.name}/${row.id}`, rel: 'self' }],
    };
  }
}
