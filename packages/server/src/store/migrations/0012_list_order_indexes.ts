import type { Kysely, Migration } from 'kysely';

/**
 * Migration 0012_list_order_indexes: indexes in the order the operator lists read.
 * - Deployments are listed (and paged by marker) by `created_at, id`, of a project or of one of its
 *   servers. With only `(project_id, server_id)`, every page sorted all the project's (or the
 *   server's) deployments first, so paging to the end was quadratic in their count. The server's
 *   index gains the two columns (it still serves every `project_id, server_id` lookup, so the old one
 *   goes) and the project gets one of its own.
 * Not an index on events' `type`: a filtered page walks the project's events after its cursor (the
 * retention bound caps them), and every signal writes an event, so each index there costs each signal.
 * Created only where missing (a database whose migration records were rewound by hand).
 */
export const migration0012: Migration = {
  // Kysely's migration API takes Kysely<any>: the schema is what the migration is changing.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema
      .createIndex('deployments_project_created')
      .ifNotExists()
      .on('software_deployments')
      .columns(['project_id', 'created_at', 'id'])
      .execute();
    await db.schema
      .createIndex('deployments_server_created')
      .ifNotExists()
      .on('software_deployments')
      .columns(['project_id', 'server_id', 'created_at', 'id'])
      .execute();
    await db.schema.dropIndex('deployments_server').ifExists().execute();
  },
};
