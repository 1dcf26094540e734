// `<template>.oac` control files: a YAML mapping of allow_empty, mode, owner and group. PyYAML
// reads them with YAML 1.1 rules, so `mode: 0644` is octal and `yes`/`off` are booleans; this
// reads the same flat `key: value` documents with the same scalar rules.
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { ApplyConfigError } from './errors.ts';

/** What a control file says about one output file. */
export interface FileControl {
  /** Write the file even when the template renders empty. Default true (false: delete it instead). */
  allowEmpty: boolean;
  /** Permission bits (0..0o777); default: the existing file's, else 0o644. */
  mode?: number;
  /** Owner uid; default: the existing file's, else the writer's. */
  uid?: number;
  /** Group gid; default: the existing file's, else the writer's. */
  gid?: number;
}

type Scalar = null | boolean | number | string | { float: string };

const NULLS = new Set(['', '~', 'null', 'Null', 'NULL']);
const TRUE = new Set(['yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']);
const FALSE = new Set(['no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']);

/** A plain YAML 1.1 scalar as PyYAML resolves it (null, bool, int in any base, float, else string). */
export function resolveYamlScalar(text: string): Scalar {
  if (NULLS.has(text)) return null;
  if (TRUE.has(text)) return true;
  if (FALSE.has(text)) return false;
  const sign = text.startsWith('-') ? -1 : 1;
  const body = text.replace(/^[-+]/, '').replaceAll('_', '');
  if (/^[-+]?0b[01_]+$/.test(text)) return sign * parseInt(body.slice(2), 2);
  if (/^[-+]?0x[0-9a-fA-F_]+$/.test(text)) return sign * parseInt(body.slice(2), 16);
  if (/^[-+]?0[0-7_]+$/.test(text)) return sign * parseInt(body, 8);
  if (/^[-+]?(?:0|[1-9][0-9_]*)$/.test(text)) return sign * parseInt(body, 10);
  if (/^[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+$/.test(text))
    return sign * body.split(':').reduce((total, part) => total * 60 + Number(part), 0);
  if (/^[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+][0-9]+)?$|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$/.test(text))
    return { float: text };
  return text;
}

function scalar(raw: string, where: string): Scalar {
  const text = raw.trim();
  if (text.startsWith("'")) {
    if (!/^'(?:[^']|'')*'$/.test(text)) throw new ApplyConfigError(`${where}: unterminated quoted value ${text}`);
    return text.slice(1, -1).replaceAll("''", "'");
  }
  if (text.startsWith('"')) {
    try {
      return JSON.parse(text) as string;
    } catch {
      throw new ApplyConfigError(`${where}: unsupported double-quoted value ${text}`);
    }
  }
  if (/^[[{&*!|>%@`]/.test(text)) throw new ApplyConfigError(`${where}: unsupported YAML value ${text} (write plain \`key: value\` lines)`);
  return resolveYamlScalar(text);
}

/** Parses a control file's text into its raw mapping (null for an empty document). */
export function parseControlYaml(text: string, where: string): Map<string, Scalar> | null {
  const entries = new Map<string, Scalar>();
  let sawScalarDocument = false;
  // PyYAML reads a mapping indented as a whole the same; its keys must all sit at the first key's column.
  let indent: string | undefined;
  // PyYAML skips a leading BOM; Python's text-mode open() reads \r\n and a lone \r as \n.
  for (const rawLine of text.replace(/^\uFEFF/, '').split(/\r\n?|\n/)) {
    const line = rawLine.replace(/(^|\s)#.*$/, '').trimEnd();
    if (line.trim() === '' || line === '---' || line === '...') continue;
    indent ??= /^ */.exec(line)?.[0] ?? '';
    const unindented = line.startsWith(indent) ? line.slice(indent.length) : line;
    const match = line.startsWith(indent) ? /^([^\s:#'"][^:]*?)\s*:(?:\s+(.*))?$/.exec(unindented) : null;
    if (!match) {
      if (entries.size === 0 && !/^\s/.test(unindented)) {
        sawScalarDocument = true;
        continue;
      }
      throw new ApplyConfigError(`${where}: unsupported YAML line ${JSON.stringify(rawLine)} (write plain \`key: value\` lines)`);
    }
    entries.set(match[1] as string, scalar(match[2] ?? '', where));
  }
  if (sawScalarDocument) throw new ApplyConfigError(`header is not a dict: ${where}`);
  return entries.size === 0 ? null : entries;
}

function show(value: Scalar): string {
  if (value === null) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'object') return value.float;
  return String(value);
}

/** Looks a name up in a passwd/group style file, then NSS (`getent`); the id, or undefined. */
function lookupId(database: 'passwd' | 'group', file: string, name: string, byId: boolean): number | undefined {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    // no local database: NSS below
  }
  for (const line of text.split('\n')) {
    const [entryName, , id] = line.split(':');
    if (id !== undefined && (byId ? id === name : entryName === name)) return Number(id);
  }
  try {
    const entry = execFileSync('getent', [database, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const [entryName, , id] = entry.split(':');
    // getent also takes a number for a name; getpwnam('0') (a quoted `owner: '0'`) finds nothing.
    if (!byId && entryName !== name) return undefined;
    return id === undefined || id === '' ? undefined : Number(id);
  } catch {
    return undefined;
  }
}

function resolveOwner(kind: 'owner' | 'group', value: Scalar): number {
  const database = kind === 'owner' ? 'passwd' : 'group';
  if (!(typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value)))) {
    throw new ApplyConfigError(`${kind} '${show(value)}' must be a string or int`);
  }
  const id = lookupId(database, `/etc/${database}`, String(value), typeof value === 'number');
  if (id === undefined) throw new ApplyConfigError(`${kind} '${show(value)}' not found in ${database} database`);
  return id;
}

/** Validates a parsed control mapping, as the original's OacFile does (same messages). */
export function fileControl(entries: Map<string, Scalar> | null): FileControl {
  const control: FileControl = { allowEmpty: true };
  for (const [key, value] of entries ?? []) {
    if (key === 'allow_empty') {
      if (typeof value !== 'boolean') throw new ApplyConfigError(`allow_empty requires Boolean, got: '${show(value)}'`);
      control.allowEmpty = value;
    } else if (key === 'mode') {
      if (typeof value !== 'number' || !Number.isInteger(value)) throw new ApplyConfigError(`mode '${show(value)}' is not numeric`);
      if (value < 0 || value > 0o777)
        throw new ApplyConfigError(`mode '${value < 0 ? '-' : ''}0o${Math.abs(value).toString(8)}' out of range`);
      control.mode = value;
    } else if (key === 'owner') control.uid = resolveOwner('owner', value);
    else if (key === 'group') control.gid = resolveOwner('group', value);
    else throw new ApplyConfigError(`unrecognised file control key '${key}'`);
  }
  return control;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Reads `<template>.oac` if it is a file (or a symlink to one), as the original's os.path.isfile; the defaults otherwise. */
export function readFileControl(controlPath: string): FileControl {
  // A directory or FIFO of that name is not a control file: reading it would fail or block.
  if (!isFile(controlPath)) return { allowEmpty: true };
  let text: string;
  try {
    text = readFileSync(controlPath, 'utf8');
  } catch (error) {
    throw new ApplyConfigError(`Could not read control file ${controlPath}: ${(error as Error).message}`);
  }
  return fileControl(parseControlYaml(text, controlPath));
}
