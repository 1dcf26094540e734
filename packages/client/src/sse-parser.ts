/** One message of a text/event-stream. */
export interface SseMessage {
  /** The `id:` field of this message, if it had one. */
  id: string | undefined;
  /** The `event:` field; `message` when absent, as the spec says. */
  event: string;
  /** The `data:` lines joined with newlines; empty for a message that only moves the last event id (`id:` alone). */
  data: string;
}

/**
 * Incremental parser of the text/event-stream format (WHATWG HTML §9.2): feed it decoded text in any
 * chunking; it returns the messages completed by each chunk. Comments (`: keepalive`) are skipped; a
 * message with an id and no data is returned with empty data (it fires no event, but a client must
 * resume from that id, as an EventSource does).
 */
export class SseParser {
  private buffer = '';
  private dataLines: string[] = [];
  private eventType = '';
  private messageId: string | undefined;

  /** Feeds a chunk of text; returns the messages whose closing blank line it contained. */
  push(chunk: string): SseMessage[] {
    this.buffer += chunk;
    const messages: SseMessage[] = [];
    let lineStart = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const char = this.buffer[i];
      if (char !== '\n' && char !== '\r') continue;
      if (char === '\r' && i + 1 === this.buffer.length) break;
      const line = this.buffer.slice(lineStart, i);
      if (char === '\r' && this.buffer[i + 1] === '\n') i++;
      lineStart = i + 1;
      const message = this.takeLine(line);
      if (message) messages.push(message);
    }
    this.buffer = this.buffer.slice(lineStart);
    return messages;
  }

  private takeLine(line: string): SseMessage | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.dataLines.push(value);
    else if (field === 'event') this.eventType = value;
    else if (field === 'id' && !value.includes('\0')) this.messageId = value;
    return undefined;
  }

  private dispatch(): SseMessage | undefined {
    const message: SseMessage | undefined =
      this.dataLines.length === 0 && this.messageId === undefined
        ? undefined
        : { id: this.messageId, event: this.eventType || 'message', data: this.dataLines.join('\n') };
    this.dataLines = [];
    this.eventType = '';
    this.messageId = undefined;
    return message;
  }
}
