import { createHash } from 'node:crypto';
import type { DeploymentSignal, Heartbeat, HeartbeatAck, SignalAck } from '@hearth/protocol';
import { heatTime } from '@hearth/protocol';
import type { Store } from '../store/store.ts';
import type { DeploymentRow } from '../store/schema.ts';
import type { Principal } from '../auth/principal.ts';
import { topics } from '../feed/feed.ts';
import type { ConfigService } from './configs.ts';
import { HearthError } from './errors.ts';
import { deadlineAfter, deploymentEvent } from './deployment-rows.ts';
import { signalOutcome } from './signal-outcome.ts';

/** Throws unless the principal may signal or heartbeat this deployment. */
export function assertMaySignal(
  principal: Principal,
  deployment: Pick<DeploymentRow, 'id' | 'server_id' | 'project_id'> | undefined,
  id: string,
): asserts deployment {
  if (!deployment) throw new HearthError('ERR_DEPLOYMENT_NOT_FOUND', { id });
  const allowed =
    (principal.kind === 'agent' && principal.serverId === deployment.server_id && principal.projectId === deployment.project_id) ||
    (principal.kind === 'capability' && principal.deploymentId === deployment.id);
  // Another server's deployment looks exactly like a missing one: its id is not confirmed.
  if (!allowed) throw new HearthError('ERR_DEPLOYMENT_NOT_FOUND', { id });
}

/** The idempotency key of a signal: the client's, else a digest of the action and the body. */
export function signalKey(derivedConfigId: string, body: DeploymentSignal, clientKey?: string): string {
  if (clientKey) return `client:${clientKey}`;
  return `body:${createHash('sha256').update(derivedConfigId).update('\n').update(JSON.stringify(body)).digest('base64url')}`;
}

/** Deployment signals and heartbeats from agents. */
export class SignalService {
  constructor(
    private readonly store: Store,
    private readonly configs: ConfigService,
  ) {}

  /**
   * Applies a signal. The reply is sent only after the transaction has committed; the same signal
   * again is acknowledged with `duplicate: true` and changes nothing.
   */
  async signal(principal: Principal, id: string, body: DeploymentSignal, clientKey?: string): Promise<SignalAck> {
    return this.store.write(async ({ trx, now, event, publish }) => {
      const row = await trx.selectFrom('software_deployments').selectAll().where('id', '=', id).executeTakeFirst();
      assertMaySignal(principal, row, id);
      const key = signalKey(row.derived_config_id, body, clientKey);
      if (row.status !== 'IN_PROGRESS') {
        const earlier = await trx
          .selectFrom('signals')
          .select(['result_status', 'result_reason'])
          .where('deployment_id', '=', id)
          .where('idempotency_key', '=', key)
          .executeTakeFirst();
        if (earlier) return { deployment_id: id, status: earlier.result_status, status_reason: earlier.result_reason, duplicate: true };
        throw new HearthError('ERR_DEPLOYMENT_NOT_IN_PROGRESS', { id, status: `${row.action}_${row.status}` });
      }
      const config = await this.configs.get(row.project_id, row.config_id);
      const outcome = signalOutcome(
        body,
        config.outputs,
        row.output_values ? (JSON.parse(row.output_values) as Record<string, unknown>) : null,
      );
      const inserted = await trx
        .insertInto('signals')
        .values({
          deployment_id: id,
          derived_config_id: row.derived_config_id,
          idempotency_key: key,
          body: JSON.stringify(body),
          result_status: outcome.status,
          result_reason: outcome.reason,
          received_at: now,
        })
        .onConflict((oc) => oc.columns(['deployment_id', 'idempotency_key']).doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) {
        throw new HearthError('ERR_SIGNAL_INVALID', {
          reason: 'this Idempotency-Key was already used for an earlier action of this deployment; send a new key',
        });
      }
      await trx
        .updateTable('software_deployments')
        .set({
          status: outcome.status,
          status_reason: outcome.reason,
          output_values: JSON.stringify(outcome.outputValues),
          deadline_at: null,
          updated_at: now,
        })
        .where('id', '=', id)
        .execute();
      const code = body.deploy_status_code ?? null;
      event(
        deploymentEvent(
          row,
          'deployment.signalled',
          `Signal received from ${principal.kind === 'agent' ? 'the agent' : 'the signal URL'}${code === null ? '' : ` (status code ${String(code)})`}`,
          { deploy_status_code: code, idempotency_key: key },
        ),
      );
      event(
        deploymentEvent(
          row,
          outcome.status === 'COMPLETE' ? 'deployment.completed' : 'deployment.failed',
          outcome.status === 'COMPLETE'
            ? `Deployment ${row.action} complete: ${outcome.reason}`
            : `Deployment ${row.action} failed: ${outcome.reason}`,
          { status: outcome.status },
        ),
      );
      publish(topics.deployment(id));
      publish(topics.deadlines);
      return { deployment_id: id, status: outcome.status, status_reason: outcome.reason, duplicate: false };
    });
  }

  /** Records a heartbeat and pushes the deadline to at least `timeout` seconds from now. */
  async heartbeat(principal: Principal, id: string, body: Heartbeat): Promise<HeartbeatAck> {
    return this.store.write(async ({ trx, now, event, publish }) => {
      const row = await trx.selectFrom('software_deployments').selectAll().where('id', '=', id).executeTakeFirst();
      assertMaySignal(principal, row, id);
      if (row.status !== 'IN_PROGRESS')
        throw new HearthError('ERR_DEPLOYMENT_NOT_IN_PROGRESS', { id, status: `${row.action}_${row.status}` });
      const extended = deadlineAfter(now, row.timeout_s);
      const deadline = row.deadline_at && row.deadline_at > extended ? row.deadline_at : extended;
      await trx.updateTable('software_deployments').set({ last_heartbeat_at: now, deadline_at: deadline }).where('id', '=', id).execute();
      const progress = body.progress === undefined ? '' : ` (${body.progress}%)`;
      event(
        deploymentEvent(row, 'deployment.heartbeat', `Heartbeat${progress}${body.message ? `: ${body.message}` : ''}`, {
          ...body,
          deadline,
        }),
      );
      publish(topics.deployment(id));
      publish(topics.deadlines);
      return { deployment_id: id, deadline: heatTime(new Date(deadline)) };
    });
  }

  /** Notes that the agent fetched these deployments (first time only); shown in their timelines. */
  async markFetched(deploymentIds: string[]): Promise<void> {
    if (deploymentIds.length === 0) return;
    await this.store.write(async ({ trx, now, event, publish }) => {
      const rows = await trx
        .selectFrom('software_deployments')
        .selectAll()
        .where('id', 'in', deploymentIds)
        .where('fetched_at', 'is', null)
        .execute();
      for (const row of rows) {
        await trx.updateTable('software_deployments').set({ fetched_at: now }).where('id', '=', row.id).execute();
        event(
          deploymentEvent(row, 'deployment.fetched', `The agent fetched the deployment (${row.action})`, {
            derived_config_id: row.derived_config_id,
          }),
        );
        publish(topics.deployment(row.id));
      }
    });
  }
}
