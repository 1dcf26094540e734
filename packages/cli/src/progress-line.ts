import type { TextSink } from './io.ts';
import { escapeControls, fitColumns } from './terminal-text.ts';

/** Options of a ProgressLine. */
export interface ProgressLineOptions {
  /** Least time between two lines when the sink is not a terminal, in ms (a change of key is shown at once). Default 10000. */
  pipeIntervalMs?: number;
}

/**
 * A status line on stderr. On a terminal it is rewritten in place whenever its text changes (the
 * caller's text changes at most once a second: it shows whole seconds), cut to the terminal's width. Elsewhere a new line is
 * printed when the key (e.g. the status) changes, else at most once per `pipeIntervalMs`.
 */
export class ProgressLine {
  private lastShownAt = Number.NEGATIVE_INFINITY;
  private lastKey: string | undefined;
  private lastText: string | undefined;
  private open = false;
  private readonly pipeIntervalMs: number;

  constructor(
    private readonly sink: TextSink,
    options: ProgressLineOptions = {},
  ) {
    this.pipeIntervalMs = options.pipeIntervalMs ?? 10_000;
  }

  /** Shows `text` if it is due: see the class comment. */
  update(raw: string, key: string, nowMs: number): void {
    // Only this class moves the cursor: the text (a name, a status) never does.
    const text = escapeControls(raw);
    const keyChanged = key !== this.lastKey;
    if (this.sink.isTTY === true) {
      if (text === this.lastText) return;
      // A line wider than the terminal wraps, and `\r\x1b[2K` clears only its last row: the rest would pile up.
      const columns = this.sink.columns;
      this.sink.write(`\r\x1b[2K${columns !== undefined && columns > 1 ? fitColumns(text, columns - 1) : text}`);
      this.open = true;
    } else {
      if (!keyChanged && nowMs - this.lastShownAt < this.pipeIntervalMs) return;
      this.sink.write(`${text}\n`);
    }
    this.lastShownAt = nowMs;
    this.lastKey = key;
    this.lastText = text;
  }

  /** Ends the line with `text` (always shown), leaving the cursor on a fresh line. */
  finish(raw: string): void {
    const text = escapeControls(raw);
    if (this.sink.isTTY === true) this.sink.write(`${this.open ? '\r\x1b[2K' : ''}${text}\n`);
    else this.sink.write(`${text}\n`);
    this.open = false;
  }

  /** Ends a line left open on a terminal, so that what follows starts on a fresh line. */
  close(): void {
    if (this.open) this.sink.write('\n');
    this.open = false;
  }
}
