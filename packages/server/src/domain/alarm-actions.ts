import { performance } from 'node:perf_hooks';
import got from 'got';
import { aodhState, type AlarmNotification, type AlarmState } from '@hearth/protocol';
import type { Transaction } from 'kysely';
import type { Store } from '../store/store.ts';
import type { Database } from '../store/schema.ts';
import type { AlarmRow } from '../store/schema-metrics-alarms.ts';
import type { Decision } from './alarm-rules.ts';
import { guardedLookup, outboundUrlProblem, shownUrl, type SocketLookup } from './link-local.ts';

/** How action deliveries are retried. */
export interface DeliveryOptions {
  /** Timeout of one POST; default 5000 ms. */
  timeoutMs: number;
  /** First retry delay, doubled each attempt; default 1000 ms. */
  backoffMs: number;
  /** Longest retry delay; default 300 000 ms. */
  maxBackoffMs: number;
  /** A delivery not done after this long is marked failed; default one day. */
  giveUpAfterMs: number;
  /** Deliveries done (delivered or failed) are deleted once queued longer ago than this; default 7 days. */
  keepDoneMs: number;
}

/** Delivery defaults, in one place. */
export const DEFAULT_DELIVERY_OPTIONS: DeliveryOptions = Object.freeze({
  timeoutMs: 5000,
  backoffMs: 1000,
  maxBackoffMs: 300_000,
  giveUpAfterMs: 86_400_000,
  keepDoneMs: 7 * 86_400_000,
});

/** POSTs a JSON body; resolves with the HTTP status (or throws on a network error). */
export type ActionPoster = (url: string, body: string, timeoutMs: number) => Promise<number>;

/**
 * The poster deliveries use: got, no retries or redirects, resolving names through `lookup`
 * (default: the system resolver, refusing forbidden addresses before connecting; a stub in tests).
 */
export function gotActionPoster(lookup: SocketLookup = guardedLookup()): ActionPoster {
  return async (url, body, timeoutMs) => {
    const response = await got.post(url, {
      body,
      headers: { 'content-type': 'application/json', 'user-agent': 'hearth-alarm-evaluator' },
      timeout: { request: timeoutMs },
      retry: { limit: 0 },
      throwHttpErrors: false,
      followRedirect: false,
      dnsLookup: lookup,
    });
    return response.statusCode;
  };
}

/**
 * Why hearth will not POST to an action URL, or null if it will: the rules of every URL
 * hearth-server calls (link-local.ts): http(s) only, never a cloud metadata service or link-local address.
 */
export function actionUrlProblem(url: string): string | null {
  return outboundUrlProblem('action URL', url);
}

/** The Aodh-shaped body of a state change (so a scaling policy's alarm_url takes it as it takes Aodh's). */
export function notificationOf(alarm: AlarmRow, previous: AlarmState, current: AlarmState, decision: Decision): AlarmNotification {
  const present = decision.datapoints.filter((d) => d.value !== null);
  return {
    alarm_name: alarm.name,
    alarm_id: alarm.id,
    severity: 'low',
    previous: aodhState(previous),
    current: aodhState(current),
    reason: decision.reason,
    reason_data: {
      type: 'threshold',
      disposition: current === 'ALARM' ? 'outside' : current === 'OK' ? 'inside' : 'unknown',
      count: present.length,
      most_recent: present.at(-1)?.value ?? null,
      statistic: alarm.statistic,
      comparison_operator: alarm.comparison_operator,
      threshold: Number(alarm.threshold),
      period: alarm.period_s,
      evaluation_periods: alarm.evaluation_periods,
    },
  };
}

/** The action URLs of an alarm for a state. */
export function actionsFor(alarm: AlarmRow, state: AlarmState): string[] {
  const column = state === 'ALARM' ? alarm.alarm_actions : state === 'OK' ? alarm.ok_actions : alarm.insufficient_data_actions;
  return JSON.parse(column) as string[];
}

/** Queues one delivery per action URL, in the transaction of the state change (the outbox). */
export async function enqueueDeliveries(trx: Transaction<Database>, now: string, alarmId: string, urls: string[], body: string) {
  if (urls.length === 0) return;
  await trx
    .insertInto('alarm_deliveries')
    .values(
      urls.map((url) => ({
        alarm_id: alarmId,
        url,
        body,
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        last_error: null,
        created_at: now,
        delivered_at: null,
      })),
    )
    .execute();
}

/**
 * Delivers queued alarm actions: each POSTed until it gets a 2xx, retried with exponential
 * backoff, in order per (alarm, URL): a later change waits behind an earlier one that is still
 * failing, so a receiver that was down sees every change, in order, once it is back. A final
 * refusal (isFinalStatus) fails the delivery at its first attempt, as Aodh, which never retries, would.
 */
export class AlarmActionDeliverer {
  private readonly options: DeliveryOptions;

  constructor(
    private readonly store: Store,
    options: Partial<DeliveryOptions> = {},
    private readonly post: ActionPoster = gotActionPoster(),
  ) {
    this.options = Object.freeze({ ...DEFAULT_DELIVERY_OPTIONS, ...options });
  }

  /**
   * Attempts every delivery that is due, until `stopAtMs` (on performance.now()'s monotonic clock:
   * a wall-clock step back must not run it past the lease) passes; returns how many
   * succeeded. Call from the lease holder only, with a stop well inside its lease, so that no other
   * process can take the lease and send the same delivery meanwhile.
   */
  async deliverDue(now = new Date(), stopAtMs = Number.POSITIVE_INFINITY): Promise<number> {
    const rows = await this.store.reader
      .selectFrom('alarm_deliveries')
      .selectAll()
      .where('status', '=', 'pending')
      .orderBy('id')
      .limit(500)
      .execute();
    const blocked = new Set<string>();
    let delivered = 0;
    for (const row of rows) {
      if (performance.now() >= stopAtMs) break;
      const key = `${row.alarm_id} ${row.url}`;
      if (blocked.has(key)) continue;
      if (row.next_attempt_at > now.toISOString()) {
        blocked.add(key);
        continue;
      }
      const failure = await this.attempt(row.url, row.body);
      const attempts = row.attempts + 1;
      if (failure === null) {
        await this.store.write(async ({ trx, now: at }) => {
          await trx
            .updateTable('alarm_deliveries')
            .set({ status: 'delivered', attempts, delivered_at: at, last_error: null })
            .where('id', '=', row.id)
            .execute();
        });
        delivered++;
        continue;
      }
      blocked.add(key);
      const giveUp = failure.final || now.getTime() - Date.parse(row.created_at) >= this.options.giveUpAfterMs;
      const delay = Math.min(this.options.maxBackoffMs, this.options.backoffMs * 2 ** (attempts - 1));
      await this.store.write(async ({ trx }) => {
        await trx
          .updateTable('alarm_deliveries')
          .set({
            status: giveUp ? 'failed' : 'pending',
            attempts,
            last_error: failure.error,
            next_attempt_at: new Date(now.getTime() + delay).toISOString(),
          })
          .where('id', '=', row.id)
          .execute();
      });
      if (giveUp) blocked.delete(key);
    }
    return delivered;
  }

  /**
   * Deletes the deliveries done (delivered or failed) that were queued more than `keepDoneMs` before
   * `nowIso`, inside the caller's transaction; returns how many. Without it an alarm that repeats its
   * actions kept a row per period for as long as it existed. Ids grow with time, so the cut is found
   * from the oldest rows (few, once pruned) and the delete walks the status index.
   */
  async prune(trx: Transaction<Database>, nowIso: string): Promise<number> {
    const cutoff = new Date(Date.parse(nowIso) - this.options.keepDoneMs).toISOString();
    const kept = await trx
      .selectFrom('alarm_deliveries')
      .select('id')
      .where('created_at', '>=', cutoff)
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    let query = trx.deleteFrom('alarm_deliveries').where('status', 'in', ['delivered', 'failed']).where('created_at', '<', cutoff);
    if (kept) query = query.where('id', '<', kept.id);
    return Number((await query.executeTakeFirst()).numDeletedRows);
  }

  /** One POST: null on a 2xx, else what went wrong and whether retrying can help. */
  private async attempt(url: string, body: string): Promise<{ error: string; final: boolean } | null> {
    // A URL stored before the rule knew its spelling breaks it for ever: final, never sent.
    const problem = actionUrlProblem(url);
    if (problem) return { error: `not sent: ${problem}; not retried`, final: true };
    try {
      const status = await this.post(url, body, this.options.timeoutMs);
      if (status >= 200 && status < 300) return null;
      // Errors are shown in the alarm's API reply: its URL without credentials.
      const error = `HTTP ${status} from ${shownUrl(url)}`;
      const final = finalStatusReason(status);
      return final ? { error: `${error}: not retried, ${final}`, final: true } : { error, final: false };
    } catch (error) {
      // A name that resolves to a forbidden address is retried: DNS answers change (link-local.ts).
      return { error: `${(error as Error).message.replaceAll(url, shownUrl(url))} (${shownUrl(url)})`, final: false };
    }
  }
}

/**
 * Why a reply status ends a delivery at once, or null when it is retried. A 3xx: redirects are never
 * followed (the new address would escape the outbound-URL rule), so the same request gets the same
 * answer. A 4xx other than 408 (timeout) and 429 (too many requests) says the request itself is
 * refused (a revoked or deleted policy's URL answers 403 or 404). Network errors, 5xx, 408 and 429
 * are retried.
 */
export function finalStatusReason(status: number): string | null {
  if (status >= 300 && status < 400) return 'a redirect is final (hearth-server never follows one)';
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) return 'a client error other than 408 or 429 is final';
  return null;
}

/** Whether a reply status ends a delivery at once (finalStatusReason says why). */
export function isFinalStatus(status: number): boolean {
  return finalStatusReason(status) !== null;
}
