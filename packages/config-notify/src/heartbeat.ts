// `heat-config-notify --heartbeat`: tells hearth-server a deployment's hook is still working, which
// extends its deadline. Only HEARTH_SIGNAL has heartbeats: the URL is the signal URL with its
// last path segment `signal` replaced by `heartbeat`, and the same capability token.
import { httpRequest, HttpRequestError, redactUrl } from '@hearth/agent-kit';
import { signalRoute, type DeploymentInfo } from './route.ts';
import { wellFormed } from './signal-data.ts';
import { serverReason } from './transports.ts';

/** Longest heartbeat message the server accepts, in characters. */
export const MAX_HEARTBEAT_MESSAGE = 4096;

/** The heartbeat URL for a HEARTH_SIGNAL signal URL; undefined when it does not end in `/signal`. */
export function heartbeatUrl(signalUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(signalUrl);
  } catch {
    return undefined;
  }
  if (!/\/signal$/.test(url.pathname)) return undefined;
  url.pathname = url.pathname.replace(/\/signal$/, '/heartbeat');
  return url.href;
}

/** What became of a heartbeat. */
export type HeartbeatResult =
  | { sent: true; status: number; deadline: string | undefined }
  | { sent: false; why: 'unsupported'; detail: string }
  | { sent: false; why: 'failed'; detail: string };

/** Options of sendHeartbeat. */
export interface HeartbeatOptions {
  message?: string;
  /** Percent done, 0-100. */
  progress?: number;
  /** Limit of the request, in ms. Default 10000. */
  timeoutMs?: number;
  http?: typeof httpRequest;
}

/** Sends one heartbeat for a deployment; transports without heartbeats are `unsupported`, not an error. */
export async function sendHeartbeat(info: DeploymentInfo, options: HeartbeatOptions = {}): Promise<HeartbeatResult> {
  let route;
  try {
    route = signalRoute(info);
  } catch (error) {
    return { sent: false, why: 'unsupported', detail: (error as Error).message };
  }
  if (route === null || route.transport !== 'HEARTH_SIGNAL')
    return { sent: false, why: 'unsupported', detail: `${route?.transport ?? 'NO_SIGNAL'} has no heartbeats` };
  const url = heartbeatUrl(route.url);
  if (url === undefined)
    return { sent: false, why: 'unsupported', detail: `the signal URL ${redactUrl(route.url)} does not end in /signal` };
  const body: Record<string, unknown> = {};
  if (options.message !== undefined && options.message !== '') body.message = wellFormed(options.message.slice(0, MAX_HEARTBEAT_MESSAGE));
  if (options.progress !== undefined) body.progress = options.progress;
  try {
    const http = options.http ?? httpRequest;
    const response = await http({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      timeoutMs: options.timeoutMs ?? 10_000,
    });
    if (response.status < 200 || response.status >= 300)
      return { sent: false, why: 'failed', detail: `the heartbeat URL answered ${response.status}: ${serverReason(response)}` };
    let deadline: string | undefined;
    try {
      deadline = response.json<{ deadline?: string }>().deadline;
    } catch {
      deadline = undefined;
    }
    return { sent: true, status: response.status, deadline };
  } catch (error) {
    if (error instanceof HttpRequestError) return { sent: false, why: 'failed', detail: error.message };
    throw error;
  }
}
