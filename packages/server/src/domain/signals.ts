import { hash } from 'node:crypto';
import type { DeploymentSignal, Heartbeat, HeartbeatAck, SignalAck, StoredOutput } from '@hearth/protocol';
import { heatTime } from '@hearth/protocol';
import type { Insertable } from 'kysely';
import type { Store } from '../store/store.ts';
import type { DeploymentRow, SignalsTable } from '../store/schema.ts';
import { precompile, preparedWrite, type PreparedBody, type PreparedWriteContext } from '../store/prepared-writes.ts';
import type { Principal } from '../auth/principal.ts';
import { topics } from '../feed/feed.ts';
import { HearthError } from './errors.ts';
import { deadlineAfter, deploymentEvent } from './deployment-rows.ts';
import { signalOutcome } from './signal-outcome.ts';
import { serialiseValues, stringifyReusing, type SerialisedValues } from './signal-json.ts';
import { storableText } from './text.ts';
import { writeRepeatedEvent } from './events.ts';

/** Throws unless the principal may signal or heartbeat this deployment. */
export function assertMaySignal(
  principal: Principal,
  deployment: Pick<DeploymentRow, 'id' | 'server_id' | 'project_id' | 'derived_config_id' | 'access_key_id'> | undefined,
  id: string,
): asserts deployment {
  if (!deployment) throw new HearthError('ERR_DEPLOYMENT_NOT_FOUND', { id });
  const allowed =
    (principal.kind === 'agent' && principal.serverId === deployment.server_id && principal.projectId === deployment.project_id) ||
    (principal.kind === 'capability' && principal.deploymentId === deployment.id);
  // Another server's deployment looks exactly like a missing one: its id is not confirmed.
  if (!allowed) throw new HearthError('ERR_DEPLOYMENT_NOT_FOUND', { id });
  // A `?token=` URL is bound to the key the deployment had when it was issued: its server's delete gives
  // it the server's own, revoked, so the deleted VM's URL is refused as a revoked credential, even in a
  // signal that raced the delete, and still once the deployment is attached again (with a new key).
  if (principal.kind === 'capability' && principal.key !== undefined && principal.key !== deployment.access_key_id) {
    throw new HearthError('ERR_AUTH_INVALID');
  }
  // A URL issued for an earlier action (a signal still queued in an agent's outbox) must not settle the current one.
  if (principal.kind === 'capability' && principal.action !== undefined && principal.action !== deployment.derived_config_id) {
    throw new HearthError('ERR_SIGNAL_STALE', { id, action: principal.action });
  }
}

/** The idempotency key of a signal: the client's, else a digest of the action and the body as serialised (JSON.stringify). */
function keyOf(derivedConfigId: string, body: DeploymentSignal, values: SerialisedValues, clientKey: string | undefined): string {
  if (clientKey) return `client:${clientKey}`;
  // One-shot hash: half the cost of a Hash object fed three times, and the same digest.
  return `body:${hash('sha256', `${derivedConfigId}\n${stringifyReusing(body, body, values)}`, 'base64url')}`;
}

/** What a signal sends to the writer thread. */
interface SignalArgs {
  principal: Principal;
  id: string;
  body: DeploymentSignal;
  clientKey: string | undefined;
}

/** What a signal reads of its deployment (not the whole row: every column read is a value built in JS). */
type SignalledDeployment = Pick<
  DeploymentRow,
  'id' | 'project_id' | 'server_id' | 'config_id' | 'derived_config_id' | 'access_key_id' | 'action' | 'status' | 'output_values'
>;

const selectDeployment = precompile<{ id: string }, SignalledDeployment>((db, p) =>
  db
    .selectFrom('software_deployments')
    .select(['id', 'project_id', 'server_id', 'config_id', 'derived_config_id', 'access_key_id', 'action', 'status', 'output_values'])
    .where('id', '=', p.id),
);
const selectEarlier = precompile<{ id: string; key: string }, { result_status: string; result_reason: string | null }>((db, p) =>
  db
    .selectFrom('signals')
    .select(['result_status', 'result_reason'])
    .where('deployment_id', '=', p.id)
    .where('idempotency_key', '=', p.key),
);
const selectConfig = precompile<{ id: string }, { project_id: string; outputs: string }>((db, p) =>
  db.selectFrom('software_configs').select(['project_id', 'outputs']).where('id', '=', p.id),
);
const insertSignal = precompile<Insertable<SignalsTable>, unknown>((db, p) =>
  db
    .insertInto('signals')
    .values({
      deployment_id: p.deployment_id,
      derived_config_id: p.derived_config_id,
      idempotency_key: p.idempotency_key,
      result_status: p.result_status,
      result_reason: p.result_reason,
      received_at: p.received_at,
    })
    .onConflict((oc) => oc.columns(['deployment_id', 'idempotency_key']).doNothing()),
);
const completeDeployment = precompile<{ id: string; status: string; status_reason: string; output_values: string; now: string }, unknown>(
  (db, p) =>
    db
      .updateTable('software_deployments')
      .set({ status: p.status, status_reason: p.status_reason, output_values: p.output_values, deadline_at: null, updated_at: p.now })
      .where('id', '=', p.id),
);

/** Declared outputs per config id, on the writer thread (configs are immutable once created). */
const configOutputs = new Map<string, { projectId: string; outputs: StoredOutput[] }>();

function* outputsOf(ctx: PreparedWriteContext, projectId: string, configId: string): PreparedBody<StoredOutput[]> {
  let config = configOutputs.get(configId);
  if (!config) {
    const row = yield* ctx.get(selectConfig, { id: configId });
    if (!row) throw new HearthError('ERR_CONFIG_NOT_FOUND', { id: configId });
    config = { projectId: row.project_id, outputs: JSON.parse(row.outputs) as StoredOutput[] };
    if (configOutputs.size > 10_000) configOutputs.clear();
    configOutputs.set(configId, config);
  }
  if (config.projectId !== projectId) throw new HearthError('ERR_CONFIG_NOT_FOUND', { id: configId });
  return config.outputs;
}

/** Applies a signal, on the writer thread (see SignalService.signal). */
function* applySignal(ctx: PreparedWriteContext, { principal, id, body, clientKey }: SignalArgs): PreparedBody<SignalAck> {
  const row = yield* ctx.get(selectDeployment, { id });
  assertMaySignal(principal, row, id);
  // Each value serialised once, for the digest and for output_values (see signal-json.ts).
  const values = serialiseValues(body);
  const key = keyOf(row.derived_config_id, body, values, clientKey);
  if (row.status !== 'IN_PROGRESS') {
    const earlier = yield* ctx.get(selectEarlier, { id, key });
    if (earlier) return { deployment_id: id, status: earlier.result_status, status_reason: earlier.result_reason, duplicate: true };
    throw new HearthError('ERR_DEPLOYMENT_NOT_IN_PROGRESS', { id, status: `${row.action}_${row.status}` });
  }
  const outputs = yield* outputsOf(ctx, row.project_id, row.config_id);
  const outcome = signalOutcome(body, outputs, row.output_values ? (JSON.parse(row.output_values) as Record<string, unknown>) : null);
  const inserted = yield* ctx.run(insertSignal, {
    deployment_id: id,
    derived_config_id: row.derived_config_id,
    idempotency_key: key,
    result_status: outcome.status,
    result_reason: outcome.reason,
    received_at: ctx.now,
  });
  if (inserted === 0) {
    throw new HearthError('ERR_SIGNAL_INVALID', {
      reason: clientKey
        ? 'this Idempotency-Key was already used for an earlier action of this deployment; send a new key'
        : 'this same signal was already applied to this action before the deployment was set IN_PROGRESS again; start a new action (change its inputs or action), or send an Idempotency-Key',
    });
  }
  yield* ctx.run(completeDeployment, {
    id,
    status: outcome.status,
    status_reason: outcome.reason,
    output_values: stringifyReusing(outcome.outputValues, body, values),
    now: ctx.now,
  });
  // One event says both what arrived and what it did (two rows cost the writer an INSERT each).
  const code = body.deploy_status_code ?? null;
  // The code may be any short string, a NUL included: the message is a text column (see storableText).
  const received = `Signal received from ${principal.kind === 'agent' ? 'the agent' : 'the signal URL'}${code === null ? '' : ` (status code ${storableText(String(code))})`}`;
  ctx.event(
    deploymentEvent(
      row,
      outcome.status === 'COMPLETE' ? 'deployment.completed' : 'deployment.failed',
      `${received}: deployment ${row.action} ${outcome.status === 'COMPLETE' ? 'complete' : 'failed'}: ${outcome.reason}`,
      { status: outcome.status, deploy_status_code: code, idempotency_key: key },
    ),
  );
  // No topics.deadlines: a settled deployment only drops a deadline, which never makes the watcher's
  // next wake-up earlier (at worst it wakes once for nothing and re-arms). Publishing it would
  // re-query the earliest deadline on the main thread after every batch of signals.
  ctx.publish(topics.deployment(id));
  return { deployment_id: id, status: outcome.status, status_reason: outcome.reason, duplicate: false };
}

/** The prepared writes of this module; the store's writer thread runs them. */
export const preparedWrites = { signal: applySignal };

const signalWrite = preparedWrite<SignalArgs, SignalAck>(import.meta.url, 'signal');

/** Deployment signals and heartbeats from agents. */
export class SignalService {
  /**
   * The fetch records being written (markFetched), by deployment. The fetch is recorded after the metadata
   * reply is handed over, in a write of its own; an agent that heartbeats or signals at once could otherwise
   * get its write committed first (PostgreSQL runs writes side by side), and the timeline would show the
   * heartbeat or result before the fetch it implies.
   */
  private readonly fetching = new Map<string, Promise<void>>();

  constructor(private readonly store: Store) {}

  /**
   * Applies a signal. The reply is sent only after the transaction has committed; the same signal
   * again is acknowledged with `duplicate: true` and changes nothing. It runs on the store's writer
   * thread (a prepared write), so the event loop only hands the body over and awaits the commit.
   */
  signal(principal: Principal, id: string, body: DeploymentSignal, clientKey?: string): Promise<SignalAck> {
    const write = () => this.store.writePrepared(signalWrite, { principal, id, body, clientKey });
    const pending = this.fetching.get(id);
    return pending ? pending.then(write) : write();
  }

  /** Records a heartbeat and pushes the deadline to at least `timeout` seconds from now. */
  async heartbeat(principal: Principal, id: string, body: Heartbeat): Promise<HeartbeatAck> {
    await this.fetching.get(id);
    return this.store.write(async ({ trx, now, publish }) => {
      const row = await trx.selectFrom('software_deployments').selectAll().where('id', '=', id).executeTakeFirst();
      assertMaySignal(principal, row, id);
      if (row.status !== 'IN_PROGRESS')
        throw new HearthError('ERR_DEPLOYMENT_NOT_IN_PROGRESS', { id, status: `${row.action}_${row.status}` });
      const extended = deadlineAfter(now, row.timeout_s);
      const deadline = row.deadline_at && row.deadline_at > extended ? row.deadline_at : extended;
      await trx.updateTable('software_deployments').set({ last_heartbeat_at: now, deadline_at: deadline }).where('id', '=', id).execute();
      const progress = body.progress === undefined ? '' : ` (${body.progress}%)`;
      const text = body.message ? `: ${storableText(body.message)}` : '';
      // One row per deployment per 10 s at most, showing the latest heartbeat and how many it stands for.
      const heartbeatType = 'deployment.heartbeat';
      await writeRepeatedEvent(trx, now, publish, { project_id: row.project_id, resource_id: id, type: heartbeatType }, (count, since) => {
        const repeats = count === 1 ? '' : ` (${count} since ${heatTime(new Date(since))})`;
        const data =
          count === 1
            ? { ...body, deadline }
            : { ...body, deadline, count, first_time: heatTime(new Date(since)), last_time: heatTime(new Date(now)) };
        return deploymentEvent(row, heartbeatType, `Heartbeat${repeats}${progress}${text}`, data);
      });
      publish(topics.deployment(id));
      publish(topics.deadlines);
      return { deployment_id: id, deadline: heatTime(new Date(deadline)) };
    });
  }

  /** Notes that the agent fetched these deployments (first time only); shown in their timelines. */
  async markFetched(deploymentIds: string[]): Promise<void> {
    if (deploymentIds.length === 0) return;
    const written = this.recordFetch(deploymentIds);
    // Settled either way (a failure is the caller's to log): a heartbeat or signal waiting on it goes on.
    const settled: Promise<void> = written
      .catch(() => undefined)
      .finally(() => {
        for (const id of deploymentIds) if (this.fetching.get(id) === settled) this.fetching.delete(id);
      });
    for (const id of deploymentIds) this.fetching.set(id, settled);
    await written;
  }

  private recordFetch(deploymentIds: string[]): Promise<void> {
    return this.store.write(async ({ trx, now, event, publish }) => {
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
