// What deleting a server does to its deployments: their own credentials were handed to that VM alone,
// no VM will signal those still in progress, and a VM registered later under the same id is a fresh
// one that must not run them again. They stay as history, in no server's metadata document, until
// the operator starts a new action on one: that action is the new VM's, with a new credential.
import { sql, type SqlBool, type Transaction } from 'kysely';
import type { Database, DeploymentRow, ServerRow } from '../store/schema.ts';
import { newAccessKeyId, type SecretDeriver } from '../auth/secrets.ts';
import type { WriteContext } from '../store/write-queue.ts';
import { failDeployments } from './deadlines.ts';
import { CREDENTIAL_TRANSPORTS } from './deployment-rows.ts';

/**
 * True for a deployment (the table as `d`) that belongs in its server's metadata document: it has no
 * access key, or a live one. Only a server's delete revokes a deployment's key and keeps the
 * deployment (one without a key gets its server's, revoked with it), so a revoked key marks a
 * deployment detached from its server id.
 */
export const ATTACHED = sql<SqlBool>`(d.access_key_id is null or exists (select 1 from resource_credentials rc where rc.access_key_id = d.access_key_id))`;

/**
 * In the server's delete transaction: revokes the credentials of its deployments (CFN URLs, keystone
 * users, temp URLs), fails those IN_PROGRESS with a reason naming the delete, and detaches them all
 * (see ATTACHED). The deployments stay, as history. Returns how many it failed and detached.
 */
export async function orphanDeployments(ctx: WriteContext, server: ServerRow): Promise<{ failed: number; detached: number }> {
  const { trx } = ctx;
  // Its deployments are those its agent reads: this project's with its id (deployments made before it registered too).
  const deployments = trx
    .selectFrom('software_deployments as d')
    .where('d.project_id', '=', server.project_id)
    .where('d.server_id', '=', server.id);
  const attached = await deployments
    .where(ATTACHED)
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .executeTakeFirstOrThrow();
  // Not cached anywhere (GuestCredentials reads the store every time): gone from the store, refused on every replica.
  // By key (the table's primary key), not by target: no scan of every credential of every project.
  const keys = deployments.select('d.access_key_id').where('d.access_key_id', 'is not', null);
  await trx.deleteFrom('resource_credentials').where('access_key_id', 'in', keys).where('kind', '=', 'deployment').execute();
  // Those with no key of their own to signal with (HEARTH_SIGNAL, NO_SIGNAL) were its agent's to read: they
  // keep its key, revoked now. A HEARTH_SIGNAL URL is bound to the key the deployment had (none, or the
  // one a return gave it, revoked above): this change of key is what refuses it.
  await trx
    .updateTable('software_deployments')
    .set({ access_key_id: server.access_key_id })
    .where('project_id', '=', server.project_id)
    .where('server_id', '=', server.id)
    .where((eb) => eb.or([eb('access_key_id', 'is', null), eb('signal_transport', 'not in', [...CREDENTIAL_TRANSPORTS])]))
    .execute();
  const waiting = await deployments.select(['d.id', 'd.project_id', 'd.server_id']).where('d.status', '=', 'IN_PROGRESS').execute();
  const reason = `Its server ${server.id} (${server.name}) was deleted before it signalled a result`;
  const failed = await failDeployments(
    ctx,
    waiting.map((deployment) => ({
      row: deployment,
      reason,
      type: 'deployment.failed',
      data: { status: 'FAILED', cause: 'server_deleted' },
    })),
  );
  return { failed: failed.size, detached: Number(attached.count) };
}

/**
 * Attaches `next` (given a new action, or set IN_PROGRESS) again when its server's delete detached it:
 * it is in the document of whichever server holds its id now or registers under it. A transport that
 * signals with a key of its own gets a new one (the old was handed to a VM that is gone), and so does
 * HEARTH_SIGNAL, whose URL is bound to its key: set IN_PROGRESS again, without a new action, it must
 * not take the deleted VM's URL (bound to no key) again. NO_SIGNAL drops its key. True if it did.
 */
export async function reattachDetached(
  trx: Transaction<Database>,
  next: DeploymentRow,
  now: string,
  secrets: SecretDeriver,
): Promise<boolean> {
  if (next.access_key_id === null) return false;
  const live = await trx
    .selectFrom('resource_credentials')
    .select('access_key_id')
    .where('access_key_id', '=', next.access_key_id)
    .executeTakeFirst();
  if (live) return false;
  if (!CREDENTIAL_TRANSPORTS.has(next.signal_transport) && next.signal_transport !== 'HEARTH_SIGNAL') {
    next.access_key_id = null;
    return true;
  }
  next.access_key_id = newAccessKeyId(secrets);
  await trx
    .insertInto('resource_credentials')
    .values({ access_key_id: next.access_key_id, project_id: next.project_id, kind: 'deployment', target_id: next.id, created_at: now })
    .execute();
  return true;
}
