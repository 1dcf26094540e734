import { readFileSync } from 'node:fs';

/** An INI file: section ('DEFAULT' for keys before any section) -> key -> every value given, in order. */
export type IniDocument = Map<string, Map<string, string[]>>;

/** The section that keys before any `[section]` line belong to, as in oslo.config. */
export const DEFAULT_SECTION = 'DEFAULT';

/** A line that is neither a section, an assignment, a comment nor a continuation. */
export class IniParseError extends Error {
  override readonly name = 'IniParseError';
  readonly code = 'ERR_INI_PARSE';
  constructor(
    /** 1-based line number. */
    readonly line: number,
    message: string,
    /** The file, when known. */
    readonly file?: string,
  ) {
    super(`${file ?? 'ini'}:${line}: ${message}`);
  }
}

/** Strips one pair of matching surrounding quotes, as oslo's parser does. */
function unquote(value: string): string {
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0])) return value.slice(1, -1);
  return value;
}

/** How to read values: oslo.config strips one pair of surrounding quotes; Python's ConfigParser keeps them. */
export interface IniOptions {
  /** Default true (oslo.config). False for files Python's ConfigParser reads (heat-cfntools, boto). */
  stripQuotes?: boolean;
}

/**
 * Parses oslo.config-style INI text: `[section]`, `key = value` or `key: value` (split at the first
 * `=` or `:`), whole-line comments `#` and `;`, indented lines continuing the previous value (joined
 * with a newline), and repeated keys accumulating (oslo's MultiStrOpt). Throws IniParseError on a line
 * it cannot read. With `stripQuotes: false`, values keep their quotes, as ConfigParser reads them.
 */
export function parseIni(text: string, file?: string, options: IniOptions = {}): IniDocument {
  const stripQuotes = options.stripQuotes ?? true;
  const document: IniDocument = new Map();
  let section = sectionIn(document, DEFAULT_SECTION);
  let last: { values: string[]; index: number } | undefined;
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((raw, index) => {
    const lineNumber = index + 1;
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) {
      if (trimmed === '') last = undefined;
      return;
    }
    if (/^\s/.test(raw) && last !== undefined) {
      last.values[last.index] = `${last.values[last.index]}\n${trimmed}`;
      return;
    }
    if (trimmed.startsWith('[')) {
      if (!trimmed.endsWith(']') || trimmed.length < 3)
        throw new IniParseError(lineNumber, `bad section header ${JSON.stringify(trimmed)}`, file);
      section = sectionIn(document, trimmed.slice(1, -1).trim());
      last = undefined;
      return;
    }
    const separator = trimmed.search(/[=:]/);
    if (separator <= 0) throw new IniParseError(lineNumber, `expected "key = value", got ${JSON.stringify(trimmed)}`, file);
    const key = trimmed.slice(0, separator).trim();
    const given = trimmed.slice(separator + 1).trim();
    const value = stripQuotes ? unquote(given) : given;
    const values = section.get(key) ?? [];
    values.push(value);
    section.set(key, values);
    last = { values, index: values.length - 1 };
  });
  if (document.get(DEFAULT_SECTION)?.size === 0) document.delete(DEFAULT_SECTION);
  return document;
}

function sectionIn(document: IniDocument, name: string): Map<string, string[]> {
  let section = document.get(name);
  if (section === undefined) {
    section = new Map();
    document.set(name, section);
  }
  return section;
}

/**
 * Reads and merges INI files in order: a key in a later file replaces that key's values from earlier
 * files (other keys of the section stay). Missing files are skipped; any other read error is thrown.
 */
export function loadIniFiles(paths: string[]): IniDocument {
  const merged: IniDocument = new Map();
  for (const path of paths) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    for (const [name, keys] of parseIni(text, path)) {
      const section = sectionIn(merged, name);
      for (const [key, values] of keys) section.set(key, [...values]);
    }
  }
  return merged;
}

/** The last value of `section.key` (oslo's StrOpt reading of a repeated key), or undefined. */
export function iniValue(document: IniDocument, section: string, key: string): string | undefined {
  return document.get(section)?.get(key)?.at(-1);
}

/**
 * Expands oslo.config references in a value: `$name` and `${name}` (names may contain `.` inside braces,
 * `group.option`) become `lookup(name)`, `$$` becomes `$`. A reference whose lookup is undefined, and a `$`
 * followed by nothing nameable, are left as written.
 */
export function osloInterpolate(value: string, lookup: (name: string) => string | undefined): string {
  return value.replace(
    /\$(?:(\$)|\{([_a-zA-Z][._a-zA-Z0-9]*)\}|([_a-zA-Z][_a-zA-Z0-9]*))/g,
    (whole, dollar?: string, braced?: string, bare?: string) => {
      if (dollar !== undefined) return '$';
      return lookup((braced ?? bare) as string) ?? whole;
    },
  );
}
