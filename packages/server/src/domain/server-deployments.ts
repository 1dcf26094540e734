// What deleting a server does to its deployments: their own credentials were handed to that VM alone,
// and no VM will signal those still in progress; a deployment given a new action after that gets a new one.
import type { Transaction } from 'kysely';
import type { Database, DeploymentRow, ServerRow } from '../store/schema.ts';
import { newAccessKeyId, type SecretDeriver } from '../auth/secrets.ts';
import type { WriteContext } from '../store/write-queue.ts';
import { failDeployments } from './deadlines.ts';

/**
 * In the server's delete transaction: revokes the credentials of its deployments (CFN URLs, keystone
 * users, temp URLs) and fails those IN_PROGRESS, with a reason naming the delete. The deployments
 * stay, as history. Returns how many it failed.
 */
export async function orphanDeployments(ctx: WriteContext, server: ServerRow): Promise<number> {
  const { trx } = ctx;
  // Its deployments are those its agent reads: this project's with its id (deployments made before it registered too).
  const deployments = trx.selectFrom('software_deployments').where('project_id', '=', server.project_id).where('server_id', '=', server.id);
  // Not cached anywhere (GuestCredentials reads the store every time): gone from the store, refused on every replica.
  // By key (the table's primary key), not by target: no scan of every credential of every project.
  const keys = deployments.select('access_key_id').where('access_key_id', 'is not', null);
  await trx.deleteFrom('resource_credentials').where('access_key_id', 'in', keys).where('kind', '=', 'deployment').execute();
  const waiting = await deployments.select(['id', 'project_id', 'server_id']).where('status', '=', 'IN_PROGRESS').execute();
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
  return failed.size;
}

/**
 * Gives `next` (about to be IN_PROGRESS again) a new access key when its own was revoked with its
 * server (ServerService.delete): the old one was handed to a VM that is gone, and a server
 * registered since under the same id must be able to signal the new action. True if it did.
 */
export async function reissueRevokedCredential(
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
  next.access_key_id = newAccessKeyId(secrets);
  await trx
    .insertInto('resource_credentials')
    .values({ access_key_id: next.access_key_id, project_id: next.project_id, kind: 'deployment', target_id: next.id, created_at: now })
    .execute();
  return true;
}
