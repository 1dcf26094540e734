import got from 'got';
import type { ActuatorWebhook } from '@hearth/protocol';
import type { Store } from '../store/store.ts';
import type { ActuatorDeliveryRow } from '../store/schema-scaling.ts';
import type { Feed } from '../feed/feed.ts';
import { collectorConfig, collectorConfText, type TransportContext } from './transports.ts';
import { actuatorHeaders, actuatorUrlProblem, openSecret, retryDelayMs } from './scaling-webhook.ts';
import { scalingTopics } from './scaling-adjust.ts';
import { resourceEvent } from './events.ts';
import { guardedLookup, shownUrl, type SocketLookup } from './link-local.ts';
import { TaskHealth } from './task-health.ts';
import { MEMBER_JOINING } from './scaling-bootstrap.ts';

/** Why a POST did not get a 2xx, and whether that is final (retrying cannot help). */
interface Failure {
  error: string;
  final: boolean;
}

/** Options of the actuator deliverer. */
export interface DelivererOptions {
  /** How often due deliveries are looked for, besides the feed's wake-ups (default 250 ms). */
  pollMs?: number;
  /** Timeout of one POST (default 10 s). */
  timeoutMs?: number;
  /** Longest wait between retries (default 30 s). */
  maxRetryDelayMs?: number;
  /** How long delivered and finally failed rows are kept (they count in a group's `delivered` and `failed`; default 7 days). */
  keepDeliveredMs?: number;
  /** How the actuator's host name is resolved (default: the system resolver, refusing forbidden addresses before connecting). */
  lookup?: SocketLookup;
}

/**
 * Delivers the actuator outbox: per group, the lowest pending sequence is POSTed (signed) until a
 * 2xx, with backoff; the next one waits behind it, so a receiver that was down gets every change,
 * in order, once it is back. New members' credentials are derived at send time, never stored.
 */
export class ActuatorDeliverer {
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private readonly pollMs: number;
  private readonly timeoutMs: number;
  private readonly maxRetryDelayMs: number;
  private readonly keepDeliveredMs: number;
  private readonly lookup: SocketLookup;
  private lastPrune = 0;
  private readonly health: TaskHealth;

  constructor(
    private readonly store: Store,
    private readonly feed: Feed,
    private readonly transport: TransportContext,
    logError: (error: unknown) => void,
    options: DelivererOptions = {},
  ) {
    this.health = new TaskHealth('actuator deliverer', logError);
    this.pollMs = options.pollMs ?? 250;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
    this.keepDeliveredMs = options.keepDeliveredMs ?? 7 * 24 * 3600 * 1000;
    this.lookup = options.lookup ?? guardedLookup();
  }

  /** Starts delivering: on every outbox change and every `pollMs`. */
  start(): void {
    this.timer ??= setInterval(() => this.kick(), this.pollMs).unref();
    this.unsubscribe ??= this.feed.subscribe(scalingTopics.outbox, () => this.kick());
  }

  /** Stops and waits for the round in flight. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.running;
  }

  /** Runs a round now (or right after the one in flight). */
  kick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.deliverDue()
      .then(
        () => this.health.succeeded(),
        (error: unknown) => this.health.failed(error),
      )
      .finally(() => {
        this.running = undefined;
        if (this.again && this.timer) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** One round: the head of each group's queue, if due, is attempted once; groups go in parallel. Returns attempts made. */
  async deliverDue(): Promise<number> {
    const pending = await this.store.reader
      .selectFrom('actuator_deliveries')
      .selectAll()
      .where('status', '=', 'pending')
      .orderBy('group_id')
      .orderBy('sequence')
      .execute();
    const heads = new Map<string, ActuatorDeliveryRow>();
    for (const row of pending) if (!heads.has(row.group_id)) heads.set(row.group_id, row);
    const nowIso = new Date().toISOString();
    const due = [...heads.values()].filter((row) => row.next_attempt_at <= nowIso);
    const delivered = await Promise.all(due.map((row) => this.attempt(row)));
    if (delivered.some(Boolean)) this.again = true;
    if (Date.now() - this.lastPrune > 60_000) await this.prune();
    return due.length;
  }

  /** Drops delivered rows, and rows failed for good, older than `keepDeliveredMs`. */
  async prune(): Promise<void> {
    this.lastPrune = Date.now();
    const before = new Date(Date.now() - this.keepDeliveredMs).toISOString();
    await this.store.write(async ({ trx }) => {
      await trx.deleteFrom('actuator_deliveries').where('status', '=', 'delivered').where('delivered_at', '<', before).execute();
      await trx.deleteFrom('actuator_deliveries').where('status', '=', 'failed').where('created_at', '<', before).execute();
    });
  }

  /** Claims a delivery for one POST (a conditional update): false when another deliverer holds it or it is no longer pending. */
  private claim(row: ActuatorDeliveryRow): Promise<boolean> {
    return this.store.write(async ({ trx, now }) => {
      const until = new Date(Date.parse(now) + this.timeoutMs + 5000).toISOString();
      const result = await trx
        .updateTable('actuator_deliveries')
        .set({ claimed_until: until })
        .where('id', '=', row.id)
        .where('status', '=', 'pending')
        .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    });
  }

  /** POSTs one delivery with `payload` (its members' credentials filled in here): null on a 2xx, else what went wrong and whether it is final. */
  private async post(
    group: { actuator_url: string; actuator_secret_sealed: string },
    row: ActuatorDeliveryRow,
    payload: ActuatorWebhook,
  ): Promise<Failure | null> {
    // Checked again at send time, as alarm actions are: a row stored before the check knew a spelling is
    // never called, and never will be (the group's URL does not change), so it is final.
    const problem = actuatorUrlProblem(group.actuator_url);
    if (problem !== null) return { error: `not sent: ${problem}`, final: true };
    try {
      const body = JSON.stringify(await this.render(payload));
      const secret = openSecret(this.transport.secrets.tokenKey(), group.actuator_secret_sealed);
      const response = await got.post(group.actuator_url, {
        body,
        headers: actuatorHeaders(secret, row.delivery_id, body),
        timeout: { request: this.timeoutMs },
        retry: { limit: 0 },
        throwHttpErrors: false,
        followRedirect: false,
        dnsLookup: this.lookup,
      });
      const status = response.statusCode;
      if (status >= 200 && status < 300) return null;
      const error = `HTTP ${status} from ${shownUrl(group.actuator_url)}`;
      // A redirect is never followed (its target would escape the outbound-URL rule): the same POST gets the same answer.
      return status >= 300 && status < 400
        ? { error: `${error}: a redirect, which hearth-server never follows`, final: true }
        : { error, final: false };
    } catch (caught) {
      // Network errors, and a name that resolves to a forbidden address now (DNS answers change), are retried.
      return {
        error: `${(caught as Error).message.replaceAll(group.actuator_url, shownUrl(group.actuator_url))}`.slice(0, 500),
        final: false,
      };
    }
  }

  /** Attempts one delivery and records the outcome; true on a 2xx. */
  private async attempt(row: ActuatorDeliveryRow): Promise<boolean> {
    const group = await this.store.reader
      .selectFrom('scaling_groups')
      .select(['id', 'project_id', 'name', 'actuator_url', 'actuator_secret_sealed'])
      .where('id', '=', row.group_id)
      .executeTakeFirst();
    if (!group) return false;
    // Read before the claim: a read that fails leaves no claim to lapse.
    const stored = JSON.parse(row.payload) as ActuatorWebhook;
    const payload = await this.withUndelivered(stored);
    if (!(await this.claim(row))) return false;
    const carried = payload.new_members.map((m) => m.server_id);
    const earlier = carried.length - stored.new_members.length;
    const failure = await this.post(group, row, payload);
    await this.store.write(async ({ trx, now, event, publish }) => {
      const current = await trx
        .selectFrom('actuator_deliveries')
        .select(['status', 'attempts'])
        .where('id', '=', row.id)
        .executeTakeFirst();
      if (!current || current.status !== 'pending') return;
      const attempts = current.attempts + 1;
      const resource = { project_id: group.project_id, resource_type: 'scaling_group', resource_id: group.id, server_id: null };
      const data = { group: group.name, delivery_id: row.delivery_id, sequence: row.sequence, attempts };
      if (failure === null) {
        await trx
          .updateTable('actuator_deliveries')
          .set({ status: 'delivered', attempts, delivered_at: now, last_error: null, claimed_until: null })
          .where('id', '=', row.id)
          .execute();
        // Their credentials reached the actuator: no later delivery carries them again.
        await trx
          .updateTable('scaling_members')
          .set({ undelivered_sequence: null })
          .where('group_id', '=', group.id)
          .where('server_id', 'in', [...carried, ''])
          .execute();
        const also = earlier > 0 ? `, with ${earlier} member(s) of earlier changes no delivery had carried` : '';
        event(resourceEvent(resource, 'scaling_group.delivered', `Change ${row.sequence} delivered to the actuator${also}`, data));
      } else if (failure.final) {
        // Failed for good: the next change is not held behind it (it carries the whole capacity and members,
        // and the members this one carried: they stay undelivered until a delivery gets a 2xx).
        await trx
          .updateTable('actuator_deliveries')
          .set({ status: 'failed', attempts, last_error: `${failure.error}; not retried`, claimed_until: null })
          .where('id', '=', row.id)
          .execute();
        const stranded =
          carried.length === 0
            ? ''
            : `; the ${carried.length} new member(s) it carried stay undelivered, their credentials unused: the next delivery that` +
              ` succeeds carries them (change the group's actuator to send one now), a scale-down removes them first`;
        event(
          resourceEvent(
            resource,
            'scaling_group.delivery_failed',
            `Change ${row.sequence} not delivered (not retried): ${failure.error}${stranded}`,
            { ...data, final: true, undelivered_members: carried },
          ),
        );
      } else {
        const next = new Date(Date.parse(now) + retryDelayMs(attempts, this.maxRetryDelayMs)).toISOString();
        await trx
          .updateTable('actuator_deliveries')
          .set({ attempts, next_attempt_at: next, last_error: failure.error, claimed_until: null })
          .where('id', '=', row.id)
          .execute();
        // One event when a delivery starts failing, not one per retry.
        if (attempts === 1)
          event(
            resourceEvent(
              resource,
              'scaling_group.delivery_failed',
              `Change ${row.sequence} not delivered (retrying): ${failure.error}`,
              data,
            ),
          );
      }
      publish(scalingTopics.group(group.id));
    });
    return failure === null;
  }

  /**
   * Adds to a change's new members those of earlier changes that no delivery carried with a 2xx (their
   * delivery failed for good): every delivery carries them until one succeeds. Earlier deliveries are
   * never pending here (this is its group's lowest pending sequence), so none of them is in flight.
   */
  private async withUndelivered(payload: ActuatorWebhook): Promise<ActuatorWebhook> {
    const rows = await this.store.reader
      .selectFrom('scaling_members as m')
      .innerJoin('servers as s', 's.id', 'm.server_id')
      .select(['m.server_id', 's.name'])
      .where('m.group_id', '=', payload.group.id)
      .where('m.undelivered_sequence', '<', payload.sequence)
      .where('m.bootstrap', '!=', MEMBER_JOINING)
      .orderBy('m.undelivered_sequence')
      .orderBy('m.server_id')
      .execute();
    const own = new Set(payload.new_members.map((m) => m.server_id));
    const earlier = rows
      .filter((r) => !own.has(r.server_id))
      .map((r) => ({ server_id: r.server_id, name: r.name, credential: null, os_collect_config: null, os_collect_config_conf: null }));
    return earlier.length === 0 ? payload : { ...payload, new_members: [...earlier, ...payload.new_members] };
  }

  /** Fills in each new member's credential and collector config from its server record (null once the server is gone). */
  private async render(payload: ActuatorWebhook): Promise<ActuatorWebhook> {
    if (payload.new_members.length === 0) return payload;
    const ids = payload.new_members.map((m) => m.server_id);
    const rows = await this.store.reader.selectFrom('servers').selectAll().where('id', 'in', ids).execute();
    return {
      ...payload,
      new_members: payload.new_members.map((member) => {
        const row = rows.find((r) => r.id === member.server_id);
        if (!row) return member;
        const secret = this.transport.secrets.agentSecret(row.access_key_id);
        const config = collectorConfig(this.transport, row);
        return {
          ...member,
          credential: {
            access_key_id: row.access_key_id,
            secret_access_key: secret,
            token: `${row.access_key_id}:${secret}`,
            metadata_url: `${this.transport.publicUrl}/v1/guest/metadata`,
          },
          os_collect_config: config,
          os_collect_config_conf: collectorConfText(config),
        };
      }),
    };
  }
}
