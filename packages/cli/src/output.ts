import type { TextSink } from './io.ts';
import { displayWidth, escapeControls, padDisplay } from './terminal-text.ts';

/** A column of a table: its header and how to get a row's cell. */
export interface Column<Row> {
  header: string;
  value: (row: Row) => unknown;
}

/** How a value reads in a table cell or after `key:`: `-` for null/undefined, strings as they are, others as JSON. */
export function displayValue(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** A cell on one line: newlines and tabs become spaces, other control characters escapes. */
function cellText(value: unknown): string {
  return escapeControls(displayValue(value).replace(/[\r\n\t]+/g, ' '));
}

/**
 * Formats rows as an aligned table: upper-case headers, columns two spaces apart (by terminal
 * columns, so wide and combining characters line up), no trailing spaces.
 */
export function formatTable<Row>(columns: ReadonlyArray<Column<Row>>, rows: readonly Row[]): string {
  const cells = [columns.map((c) => c.header.toUpperCase()), ...rows.map((row) => columns.map((c) => cellText(c.value(row))))];
  const widths = columns.map((_c, i) => Math.max(...cells.map((line) => displayWidth(line[i] ?? ''))));
  return cells
    .map((line) =>
      line
        .map((cell, i) => (i === line.length - 1 ? cell : padDisplay(cell, widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/**
 * Formats `key: value` lines with values aligned. A value with several lines goes below its key,
 * indented by two spaces. Control characters other than newlines and tabs in values are shown escaped.
 */
export function formatFields(fields: ReadonlyArray<readonly [string, unknown]>): string {
  const escaped = fields.map(([key, value]) => [escapeControls(key), escapeControls(displayValue(value), '\n\t')] as const);
  const width = Math.max(0, ...escaped.map(([key]) => displayWidth(key) + 1));
  return escaped
    .map(([key, text]) => {
      if (!text.includes('\n')) return `${padDisplay(`${key}:`, width)} ${text}`.trimEnd() + '\n';
      const body = text
        .replace(/\n$/, '')
        .split('\n')
        .map((line) => `  ${line}`.trimEnd());
      return [`${key}:`, ...body].join('\n') + '\n';
    })
    .join('');
}

/** `text` as one shell word, for commands a message tells the operator to run: as it is when plain, else single-quoted. */
export function shellWord(text: string): string {
  return /^[\w.:/=,@+-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** Formats a value as the single JSON document of --json output. */
export function formatJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** Writes a command's result: the JSON document with --json, else the human text. */
export interface Output {
  /** True with --json. */
  readonly json: boolean;
  /** Writes `document` as JSON with --json, else the text `human()` returns. */
  result(document: unknown, human: () => string): void;
  /** Writes a line to stdout (human output only; ignored with --json). */
  line(text: string): void;
  /** Writes a note to stderr (both modes: it never mixes with the JSON on stdout). */
  note(text: string): void;
  /**
   * Writes a list: the JSON document with --json; else the rows as a table or, when there are none,
   * `hearth: <empty>` on stderr and nothing on stdout (a lone header looks like a hang or a failure).
   */
  list<Row>(document: unknown, columns: ReadonlyArray<Column<Row>>, rows: readonly Row[], empty: string): void;
}

/** Creates the Output of one command run. */
export function createOutput(json: boolean, stdout: TextSink, stderr: TextSink): Output {
  return {
    json,
    result(document, human) {
      stdout.write(json ? formatJson(document) : human());
    },
    line(text) {
      if (!json) stdout.write(`${text}\n`);
    },
    note(text) {
      stderr.write(`${text}\n`);
    },
    list(document, columns, rows, empty) {
      if (json) stdout.write(formatJson(document));
      else if (rows.length === 0) stderr.write(`hearth: ${empty}\n`);
      else stdout.write(formatTable(columns, rows));
    },
  };
}
