import { CfnWaitConditionSignal, HeatWaitConditionSignal } from '@hearth/protocol';
import { HearthError } from './errors.ts';
import { bodyChecker } from './body-check.ts';
import { storableText } from './text.ts';

/** A signal as every handle flavour reduces it. */
export interface WaitSignal {
  status: 'SUCCESS' | 'FAILURE';
  reason: string | null;
  data: unknown;
  /** Null: the next number (Heat's anonymous signals). */
  id: string | null;
}

const checkCfn = bodyChecker(CfnWaitConditionSignal);
const checkHeat = bodyChecker(HeatWaitConditionSignal);

/** Reads a CFN handle body (`{Status, Reason, UniqueId, Data}`, all four required), or throws a 400 with the reason. */
export function cfnWaitSignal(body: unknown): WaitSignal {
  const reason = checkCfn(body);
  if (reason !== null)
    throw new HearthError('ERR_SIGNAL_INVALID', { reason: `${reason} (a CFN wait condition takes {Status, Reason, UniqueId, Data})` });
  const b = body as CfnWaitConditionSignal;
  return { status: b.Status, reason: storableText(b.Reason), data: b.Data, id: storableText(b.UniqueId) };
}

/** Reads a Heat handle body (`{status, reason, data, id}`, all optional; absent = a SUCCESS), or throws a 400. */
export function heatWaitSignal(body: unknown): WaitSignal {
  const value = body ?? {};
  const reason = checkHeat(value);
  if (reason !== null)
    throw new HearthError('ERR_SIGNAL_INVALID', { reason: `${reason} (a wait condition takes {status, reason, data, id})` });
  const b = value as HeatWaitConditionSignal;
  return {
    status: b.status ?? 'SUCCESS',
    reason: b.reason === undefined || b.reason === null ? null : storableText(b.reason),
    data: b.data ?? null,
    id: b.id === undefined ? null : storableText(String(b.id)),
  };
}
