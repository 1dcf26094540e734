import type { ParameterType } from '@hearth/protocol';
import { usageError } from './errors.ts';
import { MAX_DEPLOYMENT_TIMEOUT, PARAMETER_TYPES, UUID_PATTERN } from './protocol-values.ts';

/** Commander argument collector for repeatable flags: appends each value. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * Parses `--input K=V` values into an object. `K=V` gives the string V; `K:=JSON` gives a parsed
 * JSON value (`port:=8080`, `tags:=["a","b"]`). A later key wins. `flag` names the flag in errors.
 */
export function parseKeyValues(pairs: readonly string[], flag: string): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0 || (eq === 1 && pair.startsWith(':'))) {
      throw usageError(
        `${flag} ${JSON.stringify(pair)} is not KEY=VALUE`,
        `write e.g. ${flag} port=8080 (or ${flag} port:=8080 for a JSON value)`,
      );
    }
    const key = pair.slice(0, pair[eq - 1] === ':' ? eq - 1 : eq);
    // On a plain object this key would set the prototype and the input would silently vanish;
    // hearth-server refuses it anyway (ERR_REQUEST_INVALID), so say so before sending.
    if (key === '__proto__') throw usageError(`${flag} ${JSON.stringify(pair)}: hearth-server refuses a key named __proto__`, 'rename it');
    if (pair[eq - 1] === ':') {
      const text = pair.slice(eq + 1);
      try {
        values[key] = JSON.parse(text);
      } catch {
        throw usageError(
          `${flag} ${JSON.stringify(pair)}: ${JSON.stringify(text)} is not JSON`,
          `quote strings: ${flag} ${key}:='"text"', or use ${key}=text`,
        );
      }
    } else {
      values[key] = pair.slice(eq + 1);
    }
  }
  return values;
}

/** A config input declared on the command line: `NAME` or `NAME=DEFAULT`. */
export interface InputDeclaration {
  name: string;
  default?: string;
}

/** Parses `--input NAME[=DEFAULT]` of `config create`. */
export function parseInputDeclaration(text: string): InputDeclaration {
  const eq = text.indexOf('=');
  const name = eq === -1 ? text : text.slice(0, eq);
  if (name === '') throw usageError(`--input ${JSON.stringify(text)} has no name`, 'write --input NAME or --input NAME=DEFAULT');
  return eq === -1 ? { name } : { name, default: text.slice(eq + 1) };
}

/** Parses `--input-type NAME=TYPE`; TYPE is one of Heat's parameter types, in any case. */
export function parseInputType(text: string): { name: string; type: ParameterType } {
  const eq = text.indexOf('=');
  const typeText = text.slice(eq + 1);
  const type = PARAMETER_TYPES.find((t) => t.toLowerCase() === typeText.toLowerCase());
  if (eq <= 0 || type === undefined) {
    throw usageError(`--input-type ${JSON.stringify(text)} is not NAME=TYPE`, `TYPE is one of ${PARAMETER_TYPES.join(', ')}`);
  }
  return { name: text.slice(0, eq), type };
}

/** Turns a default given as text into a value of the input's type (Number, Boolean and Json are parsed). */
export function coerceDefault(name: string, text: string, type: ParameterType): unknown {
  const bad = (what: string): never => {
    throw usageError(`--input ${name}=${text}: ${JSON.stringify(text)} is not ${what}, as --input-type ${name}=${type} requires`);
  };
  switch (type) {
    case 'Number': {
      const value = Number(text);
      return text.trim() === '' || !Number.isFinite(value) ? bad('a number') : value;
    }
    case 'Boolean': {
      const lower = text.toLowerCase();
      if (['true', 'yes', 'on', '1', 't', 'y'].includes(lower)) return true;
      if (['false', 'no', 'off', '0', 'f', 'n'].includes(lower)) return false;
      return bad('a boolean');
    }
    case 'Json':
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return bad('JSON');
      }
    default:
      return text;
  }
}

/** Parses a whole number of seconds in 1..max for `flag`. Default max: the deployment maximum (7 days). */
export function parseSeconds(text: string, flag: string, max: number = MAX_DEPLOYMENT_TIMEOUT): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < 1 || value > max) {
    throw usageError(`${flag} ${JSON.stringify(text)} is not a whole number of seconds from 1 to ${max}`);
  }
  return value;
}

/** Parses a deployment action, case-insensitively, into its upper-case form. */
export function parseChoice<T extends string>(text: string, flag: string, choices: readonly T[]): T {
  const choice = choices.find((c) => c.toLowerCase() === text.toLowerCase());
  if (choice === undefined) throw usageError(`${flag} ${JSON.stringify(text)} is not one of ${choices.join(', ')}`);
  return choice;
}

/** Parses a page size for `flag`: a whole number from 1 to 1000. */
export function parseLimit(text: string, flag: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || value < 1 || value > 1000) {
    throw usageError(`${flag} ${JSON.stringify(text)} is not a whole number from 1 to 1000`);
  }
  return value;
}

/** Longest URL hearth-server takes for an alarm action or an actuator (protocol AlarmActionUrl, Actuator). */
export const MAX_URL_LENGTH = 2048;

/** A URL as a message shows it: a user and password in it (basic auth of an action) hidden. */
function shownUrl(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/*)[^/?#]*@/i, '$1***@');
}

/**
 * Checks a URL flag hearth-server will POST to (alarm actions, actuator) before any request, as the
 * server will: `http://` or `https://` (lower case), a host, at most MAX_URL_LENGTH characters. Its own
 * refusal names a schema path (`body/alarm_actions/0 must match pattern`), not the flag.
 */
export function parseHttpUrl(text: string, flag: string, example: string): string {
  const accepted = `give an http:// or https:// URL with a host (at most ${MAX_URL_LENGTH} characters), e.g. ${flag} ${example}`;
  let host = '';
  try {
    host = new URL(text).hostname;
  } catch {
    // Not a URL: refused below.
  }
  if (!/^https?:\/\//.test(text) || host === '')
    throw usageError(`${flag} ${JSON.stringify(shownUrl(text))} is not an http(s) URL`, accepted);
  if (text.length > MAX_URL_LENGTH) throw usageError(`${flag} is ${text.length} characters long`, accepted);
  return text;
}

/**
 * Checks a config or deployment id before any request is made: these ids are UUIDs. Throws a usage
 * error naming the value (and `flag`, when the id came from one) and the command that lists the ids.
 */
export function parseId(text: string, kind: 'config' | 'deployment', flag?: string): string {
  if (UUID_PATTERN.test(text)) return text;
  throw usageError(
    `${flag === undefined ? '' : `${flag} `}${JSON.stringify(text)} is not a valid ${kind} id: ${kind} ids are UUIDs (8-4-4-4-12 hex digits)`,
    `see the ${kind}s and their ids with \`hearth ${kind} list\``,
  );
}
