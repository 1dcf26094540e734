// A deployment and its signal data -> an entry in the outbox, durably, before any attempt.
import type { Logger } from '@hearth/agent-kit';
import { sendableSignal } from '@hearth/agent-kit/signal-sendable';
import { entryFields } from './attempt.ts';
import { entryId, routeTarget, type Outbox, type OutboxEntry } from './outbox.ts';
import { signalRoute, type DeploymentInfo } from './route.ts';
import { acceptedStatusCode } from './status-code.ts';
import { DEFAULT_MAX_BODY_BYTES, fitSignalBody, type BodyCut } from './trim.ts';

/** How long a signal is retried when the deployment names no timeout: hearth's largest deployment timeout (7 days), in s. */
export const DEFAULT_SIGNAL_DEADLINE_S = 7 * 24 * 3600;

/** Inputs read, in this order, as the deployment's timeout in seconds. */
export const TIMEOUT_INPUTS = ['deploy_timeout', 'deploy_timeout_s'] as const;

/** Options of queueSignal. */
export interface QueueOptions {
  outbox: Outbox;
  log: Logger;
  /** Largest body sent. Default 1 MiB (Heat's max_json_body_size). */
  maxBodyBytes?: number;
  /** The clock, in epoch ms. Default Date.now. */
  now?: () => number;
}

/** The deployment's timeout in seconds from a `deploy_timeout`-like input, else 7 days. */
export function deploymentTimeoutS(info: DeploymentInfo): number {
  for (const name of TIMEOUT_INPUTS) {
    const value = Number(info.inputs[name]);
    if (info.inputs[name] !== undefined && info.inputs[name] !== '' && Number.isFinite(value) && value > 0) return value;
  }
  return DEFAULT_SIGNAL_DEADLINE_S;
}

/** Cuts logged one line each; past this, one summary line (a signal with 20 000 outputs must not log 20 000 lines). */
export const CUTS_LOGGED_EACH = 10;

function logCuts(log: Logger, deployment: string, cuts: readonly BodyCut[]): void {
  if (cuts.length > CUTS_LOGGED_EACH) {
    const dropped = cuts.filter((cut) => cut.dropped);
    log.warn('signal values cut or dropped to fit the size limit', {
      deployment,
      cut: cuts.length - dropped.length,
      dropped: dropped.length,
      firstDropped: dropped.slice(0, CUTS_LOGGED_EACH).map((cut) => cut.field),
      cutBytes: cuts.reduce((sum, cut) => sum + cut.cutBytes, 0),
    });
    return;
  }
  for (const cut of cuts) {
    log.warn(cut.dropped ? 'signal value dropped to fit the size limit' : 'signal value cut to fit the size limit, its end kept', {
      deployment,
      field: cut.field,
      cutBytes: cut.cutBytes,
    });
  }
}

/**
 * Queues the signal of a deployment: picks its route (null for NO_SIGNAL: nothing queued), trims
 * the body to the limit, and writes the entry (fsynced, 0600). The deadline is the deployment's
 * `creation_time` (else now) plus its timeout; the timeout is kept too, for the VM's own count (see
 * attempt.ts). The same signal queued twice is one entry.
 */
export async function queueSignal(
  info: DeploymentInfo,
  data: Readonly<Record<string, unknown>>,
  options: QueueOptions,
): Promise<OutboxEntry | null> {
  const route = signalRoute(info);
  if (route === null) return null;
  const now = (options.now ?? Date.now)();
  // What another dispatcher passes on as the hook printed it may hold values hearth-server refuses (heat-config's own
  // results are sendable already): a refused body would lose the signal for good.
  const sendable = sendableSignal(data, 'heat-config-notify');
  if (sendable.changed.length > 0)
    options.log.warn(
      'signal values hearth-server would refuse were sent as JSON text (a __proto__ key left out); deploy_stderr says which',
      {
        deployment: info.id,
        fields: sendable.changed.slice(0, CUTS_LOGGED_EACH),
        count: sendable.changed.length,
      },
    );
  const accepted = acceptedStatusCode(sendable.data);
  if (accepted.changed)
    options.log.warn('deploy_status_code is not an integer or a short string: sent cut to 64 characters, whole in deploy_stderr', {
      deployment: info.id,
    });
  const fitted = fitSignalBody(accepted.data, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
  logCuts(options.log, info.id, fitted.cuts);
  const timeoutMs = deploymentTimeoutS(info) * 1000;
  const deadline = (info.createdAtMs ?? now) + timeoutMs;
  const createdAt = new Date(now).toISOString();
  const entry: OutboxEntry = {
    version: 1,
    id: entryId(info.id, route, fitted.body),
    deploymentId: info.id,
    deploymentName: info.name,
    route,
    body: fitted.body,
    createdAt,
    deadline: new Date(deadline).toISOString(),
    timeoutMs,
    attempts: 0,
    nextAttemptAt: createdAt,
    lastError: null,
  };
  const queued = await options.outbox.put(entry);
  // Queued: whatever happens while tidying up, this signal is not to be handed over again.
  await dropSuperseded(queued, options).catch((error: unknown) =>
    options.log.warn('could not look for queued signals of earlier actions', { deployment: info.id, error: (error as Error).message }),
  );
  return queued;
}

/**
 * Removes the queued signals of earlier actions of the same deployment: the same target (a CFN URL,
 * a Heat resource) but another derived config id. Sent after this one they would be refused; sent
 * first, as the older entries are, the server (which cannot tell actions apart on those URLs) would
 * settle the new action with the old action's result. One being sent right now is left alone.
 */
async function dropSuperseded(newer: OutboxEntry, options: QueueOptions): Promise<void> {
  const target = routeTarget(newer.route);
  for (const older of options.outbox.list().entries) {
    if (older.deploymentId === newer.deploymentId || older.createdAt > newer.createdAt || routeTarget(older.route) !== target) continue;
    const lock = await options.outbox.lock(older.id);
    if (!lock) continue;
    try {
      options.outbox.remove(older.id);
    } finally {
      await lock.release();
    }
    options.log.warn('dropping the queued signal of an earlier action of this deployment: a newer action replaces it', {
      ...entryFields(older),
      supersededBy: newer.id,
    });
  }
}
