import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { v7 as timeOrderedUuid } from 'uuid';
import {
  DEFAULT_DEPLOYMENT_TIMEOUT,
  type SoftwareDeployment,
  type SoftwareDeploymentCreate,
  type SoftwareDeploymentUpdate,
  type TimelineEntry,
} from '@hearth/protocol';
import type { Store } from '../store/store.ts';
import type { Transaction } from 'kysely';
import type { Database, DeploymentRow } from '../store/schema.ts';
import { topics, waitForChange, type Feed } from '../feed/feed.ts';
import type { ConfigService } from './configs.ts';
import { HearthError } from './errors.ts';
import { CREDENTIAL_TRANSPORTS, deadlineAfter, deploymentETag, deploymentEvent, deploymentFromRow } from './deployment-rows.ts';
import { resourceTimeline } from './events.ts';
import { newAccessKeyId, type SecretDeriver } from '../auth/secrets.ts';
import type { StackService } from './stacks.ts';
import { assertDocumentFits } from './metadata.ts';
import { reattachDetached } from './server-deployments.ts';

const NEW_ACTION_REASON = 'Deploy data available';
const NO_SIGNAL_REASON = 'Not waiting for outputs signal';

/**
 * Refuses a server registered in another project: its agent reads only its own project's
 * deployments, so the deployment would never reach it and would fail at its deadline. A server id
 * not registered yet is fine (deployments may come first, as in Heat).
 */
async function assertServerReachable(trx: Transaction<Database>, projectId: string, serverId: string): Promise<void> {
  const server = await trx.selectFrom('servers').select('project_id').where('id', '=', serverId).executeTakeFirst();
  if (server && server.project_id !== projectId) {
    throw new HearthError('ERR_DEPLOYMENT_INVALID', {
      reason: `server ${serverId} is registered in another project, whose deployments alone its agent reads; deploy from that project`,
    });
  }
}

/** A map that holds at least one key, else undefined (Heat skips empty values in an update). */
function nonEmpty(map: Record<string, unknown> | null | undefined): Record<string, unknown> | undefined {
  return map && Object.keys(map).length > 0 ? map : undefined;
}

/**
 * When a new action starts: now, or the second after the previous action's start if that is later.
 * A CFN_SIGNAL URL tells its action only by its Timestamp, the start in whole seconds (Heat's format,
 * sent back as signed): two actions in one second would share a URL, and the earlier action's signal
 * would settle the later one.
 */
function nextActionStart(now: string, previous: string): string {
  const earliest = (Math.floor(Date.parse(previous) / 1000) + 1) * 1000;
  return Date.parse(now) >= earliest ? now : new Date(earliest).toISOString();
}

/** Software deployments: create, update (a new action), delete, list, wait and timeline. */
export class DeploymentService {
  constructor(
    private readonly store: Store,
    private readonly configs: ConfigService,
    private readonly feed: Feed,
    private readonly stacks: StackService,
    private readonly secrets: SecretDeriver,
  ) {}

  /** Creates a deployment; it reaches the server's metadata as soon as this resolves. */
  async create(projectId: string, body: SoftwareDeploymentCreate): Promise<SoftwareDeployment> {
    const transport = body.signal_transport ?? 'HEARTH_SIGNAL';
    const timeout = body.timeout ?? DEFAULT_DEPLOYMENT_TIMEOUT;
    // Time-ordered (UUIDv7): a deployment's rows in `signals` and `events` are keyed by its id,
    // so ids that sort by creation time keep those index inserts on a few recent B-tree pages
    // instead of a random page each (less than half the WAL per signal; test/bench/README.md).
    const id = timeOrderedUuid();
    const accessKeyId = CREDENTIAL_TRANSPORTS.has(transport) ? newAccessKeyId(this.secrets) : null;
    const row = await this.store.write(async ({ trx, now, event, publish }) => {
      // Config and stack are read in the write transaction: one deleted meanwhile is a coded 404
      // here, not a foreign-key failure at the insert nor a deployment in a stack that is gone.
      const config = await this.configs.getForWrite(trx, projectId, body.config_id);
      await assertServerReachable(trx, projectId, body.server_id);
      const stack = body.stack === undefined ? null : await this.stacks.resolve(projectId, body.stack, trx);
      const resourceName = stack ? (body.resource_name ?? id) : null;
      if (stack && resourceName) await this.stacks.assertNameFree(trx, stack, resourceName);
      const status = body.status ?? (transport === 'NO_SIGNAL' ? 'COMPLETE' : 'IN_PROGRESS');
      const values: DeploymentRow = {
        id,
        project_id: projectId,
        server_id: body.server_id,
        config_id: config.id,
        derived_config_id: randomUUID(),
        derived_at: now,
        name: body.name ?? null,
        action: body.action ?? 'CREATE',
        status,
        status_reason: body.status_reason ?? (transport === 'NO_SIGNAL' && !body.status ? NO_SIGNAL_REASON : NEW_ACTION_REASON),
        input_values: JSON.stringify(body.input_values ?? {}),
        output_values: null,
        signal_transport: transport,
        timeout_s: timeout,
        deadline_at: status === 'IN_PROGRESS' ? deadlineAfter(now, timeout) : null,
        fetched_at: null,
        last_heartbeat_at: null,
        created_at: now,
        updated_at: null,
        stack_id: stack?.id ?? null,
        stack_name: stack?.name ?? null,
        resource_name: resourceName,
        access_key_id: accessKeyId,
      };
      await assertDocumentFits(trx, projectId, values);
      await trx.insertInto('software_deployments').values(values).execute();
      if (accessKeyId !== null) {
        await trx
          .insertInto('resource_credentials')
          .values({ access_key_id: accessKeyId, project_id: projectId, kind: 'deployment', target_id: id, created_at: now })
          .execute();
      }
      event(
        deploymentEvent(
          values,
          'deployment.created',
          `Deployment created: ${values.action} ${config.name ?? config.id} on server ${values.server_id}`,
          {
            action: values.action,
            status,
            config_id: config.id,
            derived_config_id: values.derived_config_id,
            timeout,
          },
        ),
      );
      publish(topics.serverMetadata(values.server_id));
      publish(topics.deployment(id));
      publish(topics.deadlines);
      return values;
    });
    return deploymentFromRow(row);
  }

  /** Reads a deployment row of the project, or throws ERR_DEPLOYMENT_NOT_FOUND. */
  async row(projectId: string, id: string): Promise<DeploymentRow> {
    const row = await this.store.reader.selectFrom('software_deployments').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row || row.project_id !== projectId) throw new HearthError('ERR_DEPLOYMENT_NOT_FOUND', { id });
    return row;
  }

  /** Shows a deployment; with `waitSeconds`, first waits while it is IN_PROGRESS. */
  async get(projectId: string, id: string, waitSeconds = 0, abort?: AbortSignal): Promise<SoftwareDeployment> {
    let row = await this.row(projectId, id);
    // On the monotonic clock: with the wall clock, a step back (NTP) held the wait open for as long as the step.
    const until = performance.now() + waitSeconds * 1000;
    while (row.status === 'IN_PROGRESS' && performance.now() < until && !abort?.aborted) {
      await waitForChange(this.feed, [topics.deployment(id)], until - performance.now(), abort);
      row = await this.row(projectId, id);
    }
    return deploymentFromRow(row);
  }

  /**
   * Lists a project's deployments (of one server if given), oldest first: all of them, as Heat does
   * (heatclient does not page), or at most `limit`, after the deployment `marker` (the last id seen;
   * one not in the project is ERR_DEPLOYMENT_NOT_FOUND).
   */
  async list(projectId: string, serverId?: string, limit?: number, marker?: string): Promise<SoftwareDeployment[]> {
    let query = this.store.reader.selectFrom('software_deployments').selectAll().where('project_id', '=', projectId);
    if (serverId) query = query.where('server_id', '=', serverId);
    if (marker) {
      const after = await this.store.reader
        .selectFrom('software_deployments')
        .select(['created_at', 'id'])
        .where('id', '=', marker)
        .where('project_id', '=', projectId)
        .executeTakeFirst();
      if (!after) throw new HearthError('ERR_DEPLOYMENT_NOT_FOUND', { id: marker });
      // One row-value comparison: both dialects seek the (…, created_at, id) index to the marker, where
      // `a > x or (a = x and b > y)` walked every row before it on each page.
      query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(after.created_at, after.id)));
    }
    query = query.orderBy('created_at').orderBy('id');
    if (limit !== undefined) query = query.limit(limit);
    const rows = await query.execute();
    return rows.map(deploymentFromRow);
  }

  /**
   * Updates a deployment as Heat's PUT does: only keys neither null nor empty apply, and
   * `output_values` replace the stored ones (Heat merges only a signal's outputs). A new config,
   * action or input values start a new action: a fresh derived-config id, IN_PROGRESS, a new deadline.
   * With `ifMatch` (the request's `If-Match`), the update applies only if `matches` accepts the
   * deployment's current ETag, checked in the write transaction: a read-merge-write (the CLI's
   * `update --input`) cannot undo another operator's change.
   */
  async update(
    projectId: string,
    id: string,
    body: SoftwareDeploymentUpdate,
    ifMatch?: { header: string; matches: (etag: string) => boolean },
  ): Promise<SoftwareDeployment> {
    const row = await this.store.write(async ({ trx, now, event, publish }) => {
      const current = await trx.selectFrom('software_deployments').selectAll().where('id', '=', id).executeTakeFirst();
      if (!current || current.project_id !== projectId) throw new HearthError('ERR_DEPLOYMENT_NOT_FOUND', { id });
      if (ifMatch && !ifMatch.matches(deploymentETag(deploymentFromRow(current)))) {
        throw new HearthError('ERR_DEPLOYMENT_CHANGED', { id, if_match: ifMatch.header.slice(0, 200) });
      }
      const config = body.config_id ? await this.configs.getForWrite(trx, projectId, body.config_id) : null;
      const next: DeploymentRow = { ...current, updated_at: now };
      // Heat skips every empty value (`if input_values:`): an empty map neither clears the inputs
      // nor starts a new action that would run the config on the server again.
      const inputValues = nonEmpty(body.input_values);
      const outputValues = nonEmpty(body.output_values);
      const newAction = Boolean(config) || Boolean(body.action) || Boolean(inputValues);
      if (config) next.config_id = config.id;
      if (body.action) next.action = body.action;
      if (inputValues) next.input_values = JSON.stringify(inputValues);
      if (body.timeout) next.timeout_s = body.timeout;
      if (outputValues) next.output_values = JSON.stringify(outputValues);
      if (newAction) {
        next.derived_config_id = randomUUID();
        next.derived_at = nextActionStart(now, current.derived_at);
        next.fetched_at = null;
        next.last_heartbeat_at = null;
        next.status = next.signal_transport === 'NO_SIGNAL' ? 'COMPLETE' : 'IN_PROGRESS';
        // The reason goes with the status hearth chose; a status the caller gives keeps the stored
        // reason unless one is given too, as Heat's update does (no FAILED "Deploy data available").
        if (!body.status) next.status_reason = next.signal_transport === 'NO_SIGNAL' ? NO_SIGNAL_REASON : NEW_ACTION_REASON;
      }
      if (body.status) next.status = body.status;
      if (body.status_reason) next.status_reason = body.status_reason;
      if (next.status === 'IN_PROGRESS' && (newAction || current.status !== 'IN_PROGRESS' || body.timeout)) {
        next.deadline_at = deadlineAfter(now, next.timeout_s);
      } else if (next.status !== 'IN_PROGRESS') {
        next.deadline_at = null;
      }
      // One its server's delete detached, run again, is the deployment of whichever server holds its id now.
      const reattached = (newAction || next.status === 'IN_PROGRESS') && (await reattachDetached(trx, next, now, this.secrets));
      // Only a new action (or coming back) changes what the document holds of this deployment.
      if (newAction || reattached) await assertDocumentFits(trx, projectId, next);
      await trx.updateTable('software_deployments').set(next).where('id', '=', id).execute();
      // Only the keys applied: a skipped empty value is not reported as a change.
      const changed = Object.keys(body).filter((k) => {
        const value = body[k as keyof SoftwareDeploymentUpdate];
        return typeof value === 'object' ? nonEmpty(value) !== undefined : Boolean(value);
      });
      event(
        deploymentEvent(
          next,
          'deployment.updated',
          newAction ? `New action ${next.action}: deploy data available` : `Deployment updated (${changed.join(', ') || 'nothing'})`,
          {
            action: next.action,
            status: next.status,
            derived_config_id: next.derived_config_id,
            changed,
            ...(reattached && { reattached: true, ...(next.access_key_id !== null && { access_key_id: next.access_key_id }) }),
          },
        ),
      );
      // The derived config carries `deploy_timeout`, so a new timeout changes the server's document too.
      // A deployment attached again is in it again.
      if (newAction || reattached || next.timeout_s !== current.timeout_s) publish(topics.serverMetadata(next.server_id));
      publish(topics.deployment(id));
      publish(topics.deadlines);
      return next;
    });
    return deploymentFromRow(row);
  }

  /** Deletes a deployment; it leaves the server's metadata at once. */
  async delete(projectId: string, id: string): Promise<void> {
    await this.store.write(async ({ trx, event, publish }) => {
      const current = await trx.selectFrom('software_deployments').selectAll().where('id', '=', id).executeTakeFirst();
      if (!current || current.project_id !== projectId) throw new HearthError('ERR_DEPLOYMENT_NOT_FOUND', { id });
      await trx.deleteFrom('signals').where('deployment_id', '=', id).execute();
      if (current.access_key_id !== null)
        await trx.deleteFrom('resource_credentials').where('access_key_id', '=', current.access_key_id).execute();
      await trx.deleteFrom('software_deployments').where('id', '=', id).execute();
      event(deploymentEvent(current, 'deployment.deleted', `Deployment deleted (was ${current.action} ${current.status})`));
      publish(topics.serverMetadata(current.server_id));
      publish(topics.deployment(id));
      publish(topics.deadlines);
    });
  }

  /** The deployment's timeline: its events, oldest first, heartbeats bounded (see resourceTimeline). */
  async timeline(projectId: string, id: string): Promise<TimelineEntry[]> {
    await this.row(projectId, id); // another project's, or a deleted, deployment is a 404
    return resourceTimeline(this.store, projectId, id, 'deployment.heartbeat');
  }
}
