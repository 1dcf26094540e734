import type { WaitCondition, WaitConditionCreate, WaitConditionHeartbeat } from '@hearth/protocol';
import { checkWaitSeconds } from './deployments.ts';
import type { Transport } from './http.ts';
import { projectPath } from './paths.ts';
import { callForField, envelopeField } from './reply.ts';

/** Conditions of pollWaitCondition. */
export interface WaitConditionPollRequest {
  /** ETag of the state the caller already has; with `wait`, the server holds the call until the state differs. */
  etag?: string | undefined;
  /** Long-poll: seconds (0..60) the server may hold the call waiting for a change. Default: answer at once. */
  wait?: number | undefined;
  /** Ends the call, retries included, when it aborts; the call then rejects with the signal's reason. Default: none. */
  signal?: AbortSignal | undefined;
}

/** What pollWaitCondition found: a new state, or that the caller's state (its ETag) is still current. */
export type WaitConditionPoll =
  { modified: true; etag: string | undefined; waitCondition: WaitCondition } | { modified: false; etag: string | undefined };

/** Operator calls on a stack's wait conditions; `stack` is the stack's name or id. */
export interface WaitConditionMethods {
  /** Creates a wait condition; the reply carries its handle (URLs and token a VM signals with). */
  createWaitCondition(stack: string, body: WaitConditionCreate): Promise<WaitCondition>;
  /** Lists the stack's wait conditions. */
  listWaitConditions(stack: string): Promise<WaitCondition[]>;
  /** Fetches one wait condition with its signals and data. */
  getWaitCondition(stack: string, name: string): Promise<WaitCondition>;
  /**
   * Fetches a wait condition conditionally: with `etag` and `wait`, the server holds the call until
   * the condition changes (modified) or `wait` seconds pass (not modified).
   */
  pollWaitCondition(stack: string, name: string, request?: WaitConditionPollRequest): Promise<WaitConditionPoll>;
  /** Deletes a wait condition and revokes its handle URLs. */
  deleteWaitCondition(stack: string, name: string): Promise<void>;
  /** Extends a wait condition's deadline by `extend` seconds (default: its timeout); fails with ERR_WAIT_CONDITION_DONE once it ended. */
  heartbeatWaitCondition(stack: string, name: string, body?: WaitConditionHeartbeat): Promise<WaitCondition>;
}

/** The ETag header of a reply, if any. */
function etagOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers.etag;
  return Array.isArray(value) ? value[0] : value;
}

/** Builds the wait-condition methods on a transport. */
export function waitConditionMethods(transport: Transport): WaitConditionMethods {
  const { project } = transport.options;
  const path = (stack: string, ...rest: string[]): string => projectPath(project, 'stacks', stack, 'wait_conditions', ...rest);
  const key = 'wait_condition';
  return {
    createWaitCondition: (stack, body) =>
      callForField<WaitCondition>(transport, { method: 'POST', path: path(stack), auth: 'operator', json: body }, key),
    listWaitConditions: (stack) =>
      callForField<WaitCondition[]>(transport, { method: 'GET', path: path(stack), auth: 'operator' }, 'wait_conditions'),
    getWaitCondition: (stack, name) =>
      callForField<WaitCondition>(transport, { method: 'GET', path: path(stack, name), auth: 'operator' }, key),
    async pollWaitCondition(stack, name, request = {}) {
      const wait = request.wait === undefined ? undefined : checkWaitSeconds(request.wait);
      const headers: Record<string, string> = request.etag === undefined ? {} : { 'if-none-match': request.etag };
      const spec = {
        method: 'GET',
        path: path(stack, name),
        auth: 'operator',
        query: { wait },
        headers,
        extraTimeoutMs: (wait ?? 0) * 1000,
        signal: request.signal,
      } as const;
      const reply = await transport.call(spec);
      const etag = etagOf(reply.headers) ?? request.etag;
      if (reply.status === 304) return { modified: false, etag };
      return { modified: true, etag, waitCondition: envelopeField<WaitCondition>(reply, key, spec) };
    },
    async deleteWaitCondition(stack, name) {
      await transport.call({ method: 'DELETE', path: path(stack, name), auth: 'operator' });
    },
    heartbeatWaitCondition: (stack, name, body = {}) =>
      callForField<WaitCondition>(transport, { method: 'POST', path: path(stack, name, 'heartbeat'), auth: 'operator', json: body }, key),
  };
}
