import got from 'got';
import { EVENT_STREAM_ERROR, type Event } from '@hearth/protocol';
import { HearthApiError, HearthConnectionError } from './errors.ts';
import { apiErrorFromReply, connectionErrorFrom, invalidBodyError, redirectError } from './error-mapping.ts';
import { sameOriginRedirects, type Transport } from './http.ts';
import { projectPath } from './paths.ts';
import { SseParser, type SseMessage } from './sse-parser.ts';

/** Options of streamEvents. */
export interface EventStreamOptions {
  /** Cursor: stream events after this one (an event id or a next_cursor). Default: from the first event (hearth-server replays the log, then follows it). */
  after?: string | undefined;
  /** Only events of this server, config or deployment. Default: all. */
  resourceId?: string | undefined;
  /** Stops the stream (the iterator then ends without error). Default: none. */
  signal?: AbortSignal | undefined;
  /** First pause before a reconnect, in ms, doubled per failed try. Default 1000. */
  reconnectDelayMs?: number | undefined;
  /** Longest pause between reconnects, in ms. Default 15000. */
  maxReconnectDelayMs?: number | undefined;
  /** Silence after which the connection is deemed dead, in ms (the server sends a keepalive every 15 s). Default 45000. */
  idleTimeoutMs?: number | undefined;
  /** Called before each reconnect with the cursor it resumes from and the failure (undefined: the server closed the stream). Default: none. */
  onReconnect?: ((info: { after: string | undefined; failures: number; error: unknown }) => void) | undefined;
}

/** Waits `ms`, or less if the signal fires. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** True once the signal has fired (a function, so TypeScript does not narrow it away). */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** True for failures a reconnect cannot cure (bad credential, bad or expired cursor, no such project, garbled stream). */
function isPermanent(error: unknown): boolean {
  if (!(error instanceof HearthApiError)) return false;
  if (error.code === 'ERR_RESPONSE_INVALID') return true;
  return error.status >= 400 && error.status < 500 && error.status !== 408 && error.status !== 429;
}

/**
 * Streams the project's events as they happen (GET /events/stream, server-sent events). After a
 * dropped connection it reconnects from the last event seen, with growing pauses, until the signal
 * fires; a failure of the very first connection, or a 4xx reply, is thrown instead.
 */
export async function* streamEvents(transport: Transport, options: EventStreamOptions = {}): AsyncGenerator<Event> {
  const baseDelay = options.reconnectDelayMs ?? 1000;
  const maxDelay = options.maxReconnectDelayMs ?? 15_000;
  let cursor = options.after;
  let connectedOnce = false;
  let failures = 0;
  while (!isAborted(options.signal)) {
    let failure: unknown;
    try {
      const onOpen = (): void => {
        connectedOnce = true;
        failures = 0;
      };
      for await (const message of openStream(transport, cursor, options, onOpen)) {
        // No event, only where to resume from (the server moved a cursor that was beyond its newest event).
        if (message.data === '') {
          cursor = message.id ?? cursor;
          continue;
        }
        const url = transport.urlOf(projectPath(transport.options.project, 'events', 'stream'));
        // The server ended the stream on a coded error (the events after the cursor were deleted): a
        // reconnect would get the same, so it is thrown as the reply's error would be.
        if (message.event === EVENT_STREAM_ERROR) throw streamError(message, url);
        const event = parseEvent(message, url);
        cursor = message.id ?? String(event.id);
        yield event;
      }
    } catch (error) {
      if (isAborted(options.signal)) return;
      if (!connectedOnce || isPermanent(error)) throw error;
      failures++;
      failure = error;
    }
    if (isAborted(options.signal)) return;
    options.onReconnect?.({ after: cursor, failures, error: failure });
    await pause(Math.min(maxDelay, baseDelay * 2 ** Math.max(0, failures - 1)), options.signal);
  }
}

/** The error a stream's last message carries (an ErrorBody, as a 4xx reply's). */
function streamError(message: SseMessage, url: string): HearthApiError {
  let status = 0;
  try {
    status = Number((JSON.parse(message.data) as { code?: unknown }).code) || 0;
  } catch {
    // apiErrorFromReply reports the garbled body
  }
  return apiErrorFromReply({ method: 'GET', url, status, bodyText: message.data });
}

/** Decodes one message's data as an Event. */
function parseEvent(message: SseMessage, url: string): Event {
  try {
    return JSON.parse(message.data) as Event;
  } catch {
    throw invalidBodyError({ method: 'GET', url, status: 200, bodyText: message.data });
  }
}

/** Opens one connection to the stream, calls onOpen once it is accepted, and yields its messages until it ends. */
async function* openStream(
  transport: Transport,
  after: string | undefined,
  options: EventStreamOptions,
  onOpen: () => void,
): AsyncGenerator<SseMessage> {
  const { timeoutMs, baseUrl, project } = transport.options;
  const url = transport.urlOf(projectPath(project, 'events', 'stream'), { after, resource_id: options.resourceId });
  const target = { method: 'GET', url };
  const extra: Record<string, string> = { accept: 'text/event-stream' };
  if (after !== undefined) extra['last-event-id'] = after;
  const stream = got.stream(url, {
    headers: transport.headersFor('operator', extra),
    throwHttpErrors: false,
    followRedirect: sameOriginRedirects(baseUrl),
    retry: { limit: 0 },
    timeout: { connect: timeoutMs, response: timeoutMs, socket: options.idleTimeoutMs ?? 45_000 },
    signal: options.signal,
  });
  const decoder = new TextDecoder();
  try {
    const response = await new Promise<{ statusCode: number; headers: Record<string, string | string[] | undefined> }>(
      (resolve, reject) => {
        stream.once('response', resolve);
        stream.once('error', reject);
      },
    ).catch((error: unknown) => {
      throw connectionErrorFrom(error, { ...target, baseUrl, timeoutMs });
    });
    if (response.statusCode >= 300 && response.statusCode < 400) {
      const location = response.headers.location;
      throw redirectError({ ...target, status: response.statusCode, location: typeof location === 'string' ? location : undefined });
    }
    if (response.statusCode >= 300) {
      let bodyText = '';
      for await (const chunk of stream) bodyText += decoder.decode(chunk as Buffer, { stream: true });
      throw apiErrorFromReply({ ...target, status: response.statusCode, bodyText });
    }
    onOpen();
    const parser = new SseParser();
    try {
      for await (const chunk of stream) yield* parser.push(decoder.decode(chunk as Buffer, { stream: true }));
    } catch (error) {
      if (error instanceof HearthApiError || error instanceof HearthConnectionError) throw error;
      throw connectionErrorFrom(error, { ...target, baseUrl, timeoutMs });
    }
  } finally {
    stream.destroy();
  }
}
