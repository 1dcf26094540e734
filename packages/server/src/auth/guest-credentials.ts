import type { Store } from '../store/store.ts';
import type { ServerService } from '../domain/servers.ts';
import { placementOf } from '../domain/stacks.ts';
import { HearthError } from '../domain/errors.ts';
import { secretsEqual, type SecretDeriver } from './secrets.ts';

/** The one resource a guest credential reaches, named as its ARN names it. */
export interface ResourceRef {
  accessKeyId: string;
  projectId: string;
  stackId: string;
  stackName: string;
  resourceName: string;
}

/** Who holds a guest credential (an access key): a server, a deployment, or a wait condition. */
export type Holder =
  | (ResourceRef & { kind: 'server'; serverId: string })
  | (ResourceRef & { kind: 'deployment'; deploymentId: string })
  | (ResourceRef & { kind: 'wait_condition'; waitConditionId: string; expiresAt: string | null })
  | (ResourceRef & { kind: 'scaling_policy'; policyId: string; expiresAt: string | null });

/**
 * Finds what a guest credential may reach, for the CFN, Heat and Swift-compatible endpoints. A
 * credential reaches exactly one resource (Heat lets any stack credential signal any resource of
 * its stack; hearth does not). Secrets are derived from the access key, never stored.
 */
export class GuestCredentials {
  constructor(
    private readonly store: Store,
    private readonly servers: ServerService,
    private readonly secrets: SecretDeriver,
  ) {}

  /** The secret of an access key (EC2 signing key and keystone password). */
  secretOf(accessKeyId: string): string {
    return this.secrets.agentSecret(accessKeyId);
  }

  /** Resolves an access key to its holder, or null if it is unknown or revoked. */
  async lookup(accessKeyId: string): Promise<Holder | null> {
    if (!/^[0-9a-f]{32}$/.test(accessKeyId)) return null;
    const server = await this.servers.byAccessKeyId(accessKeyId);
    if (server) {
      const p = placementOf(server, 'server');
      return { kind: 'server', serverId: server.id, accessKeyId, projectId: server.project_id, ...p };
    }
    const credential = await this.store.reader
      .selectFrom('resource_credentials')
      .selectAll()
      .where('access_key_id', '=', accessKeyId)
      .executeTakeFirst();
    if (!credential) return null;
    if (credential.kind === 'deployment') {
      const row = await this.store.reader
        .selectFrom('software_deployments')
        .selectAll()
        .where('id', '=', credential.target_id)
        .executeTakeFirst();
      if (!row) return null;
      return { kind: 'deployment', deploymentId: row.id, accessKeyId, projectId: row.project_id, ...placementOf(row, 'deployment') };
    }
    if (credential.kind === 'scaling_policy') return this.policyHolder(accessKeyId, credential.target_id);
    const row = await this.store.reader
      .selectFrom('wait_conditions')
      .innerJoin('stacks', 'stacks.id', 'wait_conditions.stack_id')
      .select([
        'wait_conditions.id',
        'wait_conditions.project_id',
        'wait_conditions.name',
        'wait_conditions.urls_expire_at',
        'stacks.id as stack_id',
        'stacks.name as stack_name',
      ])
      .where('wait_conditions.id', '=', credential.target_id)
      .executeTakeFirst();
    if (!row) return null;
    return {
      kind: 'wait_condition',
      waitConditionId: row.id,
      accessKeyId,
      projectId: row.project_id,
      stackId: row.stack_id,
      stackName: row.stack_name,
      resourceName: row.name,
      expiresAt: row.urls_expire_at,
    };
  }

  /** The scaling policy an access key was issued to, while that key is still the policy's own (rotation revokes). */
  private async policyHolder(accessKeyId: string, policyId: string): Promise<Holder | null> {
    const row = await this.store.reader
      .selectFrom('scaling_policies')
      .innerJoin('stacks', 'stacks.id', 'scaling_policies.stack_id')
      .select(['scaling_policies.id', 'scaling_policies.project_id', 'scaling_policies.name', 'scaling_policies.access_key_id'])
      .select(['scaling_policies.stack_id', 'scaling_policies.urls_expire_at', 'stacks.name as stack_name'])
      .where('scaling_policies.id', '=', policyId)
      .executeTakeFirst();
    if (!row || row.access_key_id !== accessKeyId) return null;
    return {
      kind: 'scaling_policy',
      policyId: row.id,
      accessKeyId,
      projectId: row.project_id,
      stackId: row.stack_id,
      stackName: row.stack_name,
      resourceName: row.name,
      expiresAt: row.urls_expire_at,
    };
  }

  /** The resource named `resource` in a stack (for the operator, who may reach any), or null. */
  async inStack(projectId: string, stackName: string, stackId: string, resource: string): Promise<Holder | null> {
    const stack = await this.store.reader
      .selectFrom('stacks')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('id', '=', stackId)
      .where('name', '=', stackName)
      .executeTakeFirst();
    if (!stack) return null;
    const ref = { projectId, stackId, stackName, resourceName: resource };
    const server = await this.store.reader
      .selectFrom('servers')
      .select(['id', 'access_key_id'])
      .where('stack_id', '=', stackId)
      .where('resource_name', '=', resource)
      .executeTakeFirst();
    if (server) return { kind: 'server', serverId: server.id, accessKeyId: server.access_key_id, ...ref };
    const deployment = await this.store.reader
      .selectFrom('software_deployments')
      .select(['id', 'access_key_id'])
      .where('stack_id', '=', stackId)
      .where('resource_name', '=', resource)
      .executeTakeFirst();
    if (deployment) return { kind: 'deployment', deploymentId: deployment.id, accessKeyId: deployment.access_key_id ?? '', ...ref };
    const condition = await this.store.reader
      .selectFrom('wait_conditions')
      .select(['id', 'access_key_id'])
      .where('stack_id', '=', stackId)
      .where('name', '=', resource)
      .executeTakeFirst();
    if (condition)
      return { kind: 'wait_condition', waitConditionId: condition.id, accessKeyId: condition.access_key_id, expiresAt: null, ...ref };
    const policy = await this.store.reader
      .selectFrom('scaling_policies')
      .select(['id', 'access_key_id'])
      .where('stack_id', '=', stackId)
      .where('name', '=', resource)
      .executeTakeFirst();
    if (policy) return { kind: 'scaling_policy', policyId: policy.id, accessKeyId: policy.access_key_id ?? '', expiresAt: null, ...ref };
    return null;
  }

  /**
   * True while the credential a holder was found by is live. Deleting its resource (a server, a wait
   * condition) can commit after the look-up: a guest route asks again before it answers with what it read.
   */
  async stillHeld(holder: Holder): Promise<boolean> {
    return (await this.lookup(holder.accessKeyId)) !== null;
  }

  /** Keystone password auth: user id = access key, password = its secret. Null when either is wrong. */
  async password(userId: string, password: string): Promise<Holder | null> {
    if (!secretsEqual(password, this.secretOf(userId))) return null;
    return this.lookup(userId);
  }
}

/** The 404 a signal's write answers when the holder's resource is gone. */
const GONE: Partial<Record<Holder['kind'], string>> = {
  wait_condition: 'ERR_WAIT_CONDITION_NOT_FOUND',
  deployment: 'ERR_DEPLOYMENT_NOT_FOUND',
};

/**
 * Rethrows a guest's signal failure as `revoked()` when it is the 404 of the holder's own wait
 * condition or deployment: deleted (and its credential with it, in one transaction) after the
 * credential was checked, the signal gets the answer of a revoked credential on its surface, as it
 * does once the DELETE has answered, not a 404 naming the resource's internal id.
 */
export function revokedWhenGone(holder: Holder, revoked: () => Error): (error: unknown) => never {
  return (error) => {
    if (error instanceof HearthError && error.code === GONE[holder.kind]) throw revoked();
    throw error;
  };
}

/** True when an ARN (or its parts) names exactly the holder's resource. */
export function namesHolder(
  holder: Holder,
  target: { project: string; stackName: string; stackId: string; resourceName: string | null },
): boolean {
  return (
    target.project === holder.projectId &&
    target.stackName === holder.stackName &&
    target.stackId === holder.stackId &&
    target.resourceName === holder.resourceName
  );
}

/** True when a holder's URLs have expired (only wait conditions and scaling policies carry an expiry). */
export function holderExpired(holder: Holder, now = new Date()): boolean {
  return (
    (holder.kind === 'wait_condition' || holder.kind === 'scaling_policy') &&
    holder.expiresAt !== null &&
    holder.expiresAt <= now.toISOString()
  );
}
