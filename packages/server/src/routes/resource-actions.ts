import type { FastifyBaseLogger } from 'fastify';
import { DeploymentSignal, heatTime } from '@hearth/protocol';
import type { Services } from '../services.ts';
import type { Holder } from '../auth/guest-credentials.ts';
import type { MetadataSnapshot } from '../domain/metadata.ts';
import { HearthError } from '../domain/errors.ts';
import { bodyChecker } from '../domain/body-check.ts';
import { cfnWaitSignal, heatWaitSignal } from '../domain/wait-condition-signals.ts';

const checkDeploymentSignal = bodyChecker(DeploymentSignal);

/** A server's metadata snapshot as its agent reads it, recording the first fetch of new deployments. */
export async function serverSnapshot(
  services: Services,
  holder: Holder & { kind: 'server' },
  log: FastifyBaseLogger,
): Promise<MetadataSnapshot> {
  services.servers.touch(holder.serverId);
  const snapshot = await services.metadata.snapshot(holder.projectId, holder.serverId);
  if (snapshot.unfetched.length > 0) {
    const fetched = snapshot.unfetched;
    services.metadata.clearUnfetched(holder.serverId);
    services.signals.markFetched(fetched).catch((error: unknown) => log.error({ err: error }, 'could not record the fetch'));
  }
  return snapshot;
}

/** The metadata of the resource a credential holds: a server's document, a handle's signals, or `{}`. */
export async function resourceMetadata(services: Services, holder: Holder, log: FastifyBaseLogger): Promise<unknown> {
  switch (holder.kind) {
    case 'server':
      return JSON.parse((await serverSnapshot(services, holder, log)).body) as unknown;
    case 'wait_condition':
      return services.waitConditions.handleMetadata(holder.waitConditionId);
    default:
      return {};
  }
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
 * Applies a signal to the resource a credential holds. `cfn-wait` is the body of a CFN handle
 * (`PUT /waitcondition`); `heat` is everything else (`POST /signal`, the native resource signal,
 * Swift PUTs): a Heat handle body for wait conditions, the hook's output for deployments.
 */
export async function resourceSignal(
  services: Services,
  holder: Holder,
  body: unknown,
  flavour: 'cfn-wait' | 'heat',
  action?: string,
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
      return services.signals.signal(
        { kind: 'capability', deploymentId: holder.deploymentId, ...(action !== undefined && { action }) },
        holder.deploymentId,
        signal as DeploymentSignal,
      );
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
