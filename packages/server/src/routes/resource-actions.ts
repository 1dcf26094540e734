import type { FastifyBaseLogger } from 'fastify';
import { DeploymentSignal, heatTime } from '@hearth/protocol';
import type { Services } from '../services.ts';
import type { Holder } from '../auth/guest-credentials.ts';
import type { MetadataSnapshot } from '../domain/metadata.ts';
import { HearthError } from '../domain/errors.ts';
import { bodyChecker } from '../domain/body-check.ts';
import { cfnWaitSignal, heatWaitSignal } from '../domain/wait-condition-signals.ts';

const checkDeploymentSignal = bodyChecker(DeploymentSignal);

/**
 * A server's metadata snapshot as its agent reads it, recording the first fetch of new deployments. With
 * `revoked` (a guest's credential), it is answered only while that credential is live: the server's delete can
 * commit while the document is read (or just after it came from the cache), and once that DELETE has answered,
 * its document must not be sent, nor its deployments' first fetch recorded (the native metadata route checks the
 * same way, in routes/guest). `revoked` is the answer of a revoked credential on the caller's surface.
 */
export async function serverSnapshot(
  services: Services,
  holder: Holder & { kind: 'server' },
  log: FastifyBaseLogger,
  revoked?: () => Error,
): Promise<MetadataSnapshot> {
  const snapshot = await services.metadata.snapshot(holder.projectId, holder.serverId);
  await assertStillHeld(services, holder, revoked);
  services.servers.touch(holder.serverId);
  if (snapshot.unfetched.length > 0) {
    const fetched = snapshot.unfetched;
    services.metadata.clearUnfetched(holder.serverId);
    services.signals.markFetched(fetched).catch((error: unknown) => log.error({ err: error }, 'could not record the fetch'));
  }
  return snapshot;
}

/**
 * The metadata of the resource a credential holds: a server's document, a handle's signals, or `{}`. With
 * `revoked`, answered only while the credential is live (see serverSnapshot).
 */
export async function resourceMetadata(
  services: Services,
  holder: Holder,
  log: FastifyBaseLogger,
  revoked?: () => Error,
): Promise<unknown> {
  switch (holder.kind) {
    case 'server':
      return JSON.parse((await serverSnapshot(services, holder, log, revoked)).body) as unknown;
    case 'wait_condition': {
      const metadata = await services.waitConditions.handleMetadata(holder.waitConditionId);
      await assertStillHeld(services, holder, revoked);
      return metadata;
    }
    default:
      await assertStillHeld(services, holder, revoked);
      return {};
  }
}

/** Throws `revoked()` when it is given and the holder's credential is no longer live. */
async function assertStillHeld(services: Services, holder: Holder, revoked: (() => Error) | undefined): Promise<void> {
  if (revoked !== undefined && !(await services.guestCredentials.stillHeld(holder))) throw revoked();
}

/**
 * Refuses a deployment's pre-signed CFN_SIGNAL URL issued for an earlier action: the URL's
 * Timestamp is the start of the action it was made for (a signal still queued in an agent's outbox
 * must not settle a newer action). Returns that action (its derived config id) for resourceSignal,
 * so the signal's transaction checks it again: an action started after this read must not be settled
 * either. Undefined when there is nothing to bind (not a deployment, or a URL without Timestamp).
 */
export async function assertCurrentAction(services: Services, holder: Holder, signedAt: string | undefined): Promise<string | undefined> {
  if (holder.kind !== 'deployment' || signedAt === undefined) return undefined;
  const row = await services.store.reader
    .selectFrom('software_deployments')
    .select(['derived_at', 'derived_config_id'])
    .where('id', '=', holder.deploymentId)
    .executeTakeFirst();
  if (!row) return undefined;
  if (heatTime(new Date(row.derived_at)) !== signedAt) {
    throw new HearthError('ERR_SIGNAL_STALE', { id: holder.deploymentId, action: `the one started at ${signedAt}` });
  }
  return row.derived_config_id;
}

/**
 * Rethrows a signal's failure, as `revoked()` when it is a deployment's 409 (not IN_PROGRESS) and the
 * credential it came with is revoked now. The credential was checked before the signal's write: a
 * server's delete that committed in between failed the deployment and revoked the credential, and
 * the signal must get the answer it gets after the delete, not a 409 that tells the agent the
 * deployment moved on. Only a refusal pays for the look-up; revocation is for good, so a key gone
 * now was gone before this answer.
 */
export async function revokedInstead(error: unknown, live: () => Promise<boolean>, revoked: () => Error): Promise<never> {
  if (error instanceof HearthError && error.code === 'ERR_DEPLOYMENT_NOT_IN_PROGRESS' && !(await live())) throw revoked();
  throw error;
}

/**
 * Applies a signal to the resource a credential holds. `cfn-wait` is the body of a CFN handle
 * (`PUT /waitcondition`); `heat` is everything else (`POST /signal`, the native resource signal,
 * Swift PUTs): a Heat handle body for wait conditions, the hook's output for deployments.
 * `revoked` is the error the route answers a revoked credential with (none for the operator's
 * holder, whose signal no delete revokes): see revokedInstead.
 */
export async function resourceSignal(
  services: Services,
  holder: Holder,
  body: unknown,
  flavour: 'cfn-wait' | 'heat',
  action?: string,
  revoked?: () => Error,
): Promise<unknown> {
  switch (holder.kind) {
    case 'wait_condition':
      return services.waitConditions.signal(holder.waitConditionId, flavour === 'cfn-wait' ? cfnWaitSignal(body) : heatWaitSignal(body));
    case 'deployment': {
      if (flavour === 'cfn-wait')
        throw new HearthError('ERR_RESOURCE_SIGNAL_UNSUPPORTED', {
          name: holder.resourceName,
          kind: 'deployment (signal it with POST /v1/signal)',
        });
      const signal = body ?? {};
      const reason = checkDeploymentSignal(signal);
      if (reason !== null) throw new HearthError('ERR_SIGNAL_INVALID', { reason });
      // With `action` (a URL issued for one action), a later action answers ERR_SIGNAL_STALE, checked in the signal's transaction.
      const principal = { kind: 'capability' as const, deploymentId: holder.deploymentId, ...(action !== undefined && { action }) };
      try {
        return await services.signals.signal(principal, holder.deploymentId, signal as DeploymentSignal);
      } catch (error) {
        if (!revoked) throw error;
        return revokedInstead(error, async () => (await services.guestCredentials.lookup(holder.accessKeyId)) !== null, revoked);
      }
    }
    case 'scaling_policy':
      if (flavour === 'cfn-wait')
        throw new HearthError('ERR_RESOURCE_SIGNAL_UNSUPPORTED', {
          name: holder.resourceName,
          kind: 'scaling policy (signal it with POST /v1/signal)',
        });
      // The key is checked again where the signal is written. The operator's holder of a revoked policy has none, and needs none.
      return services.scalingPolicies.signal(
        holder.policyId,
        body,
        holder.accessKeyId === '' ? undefined : { accessKeyId: holder.accessKeyId, expiresAt: holder.expiresAt },
      );
    default:
      throw new HearthError('ERR_RESOURCE_SIGNAL_UNSUPPORTED', { name: holder.resourceName, kind: holder.kind });
  }
}
