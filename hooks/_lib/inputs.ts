import { parsePyJson, pyPlainData, PyBigInt, PyFloat } from '@hearth/agent-kit/python-json';
import type { Deployment } from './deployment.ts';

/** Inputs that carry credentials of the signal transport; hooks hide them from tools unless asked (see inputEnv). */
export const CREDENTIAL_INPUTS: ReadonlySet<string> = new Set(['deploy_password', 'deploy_signal_id']);

/** Words Heat's Boolean parameter accepts, lower-cased. */
const TRUE_WORDS = new Set(['t', 'true', 'on', 'y', 'yes', '1']);
const FALSE_WORDS = new Set(['f', 'false', 'off', 'n', 'no', '0']);

/** A value as a string the way a user expects: strings as they are, null as '', numbers as Python's str(), anything else as JSON. */
export function stringify(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  // Every digit of a big integer, and a float as a float (`1.0`): JSON.stringify would give the rounded number.
  if (value instanceof PyFloat || value instanceof PyBigInt) return String(value);
  return JSON.stringify(value) ?? '';
}

/**
 * Converts an input value by its declared type; never throws. String: scalars as text (`true`, `3`), objects as
 * JSON, null as ''. Number: numeric strings become numbers. Boolean: Heat's words (`yes`, `on`, `1`, ...) and
 * numbers become booleans. Json: JSON text is parsed as json.loads does (`1.0` a PyFloat). CommaDelimitedList: a
 * string is split on commas and each item trimmed ('' is []). A value that does not fit its type, and any unknown type, is kept as given.
 */
export function convertInput(type: string, value: unknown): unknown {
  switch (type) {
    case 'String':
      return stringify(value);
    case 'Number': {
      if (typeof value !== 'string' || value.trim() === '') return value ?? null;
      const number = Number(value.trim());
      return Number.isFinite(number) ? number : value;
    }
    case 'Boolean': {
      if (typeof value === 'number') return value !== 0;
      if (typeof value !== 'string') return value ?? null;
      const word = value.trim().toLowerCase();
      return TRUE_WORDS.has(word) ? true : FALSE_WORDS.has(word) ? false : value;
    }
    case 'Json': {
      if (typeof value !== 'string') return value ?? null;
      try {
        // As json.loads reads it: `1.0` stays a float and big integers keep their digits for the tools' files.
        return pyPlainData(parsePyJson(value));
      } catch {
        return value;
      }
    }
    case 'CommaDelimitedList': {
      if (Array.isArray(value)) return value;
      if (value === null || value === undefined) return [];
      if (typeof value !== 'string') return [stringify(value)];
      return value.trim() === '' ? [] : value.split(',').map((item) => item.trim());
    }
    default:
      return value ?? null;
  }
}

/** Every input by name (a later input of the same name wins, as in a Python dict). */
export function inputValues(deployment: Deployment): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const input of deployment.inputs) values[input.name] = input.value;
  return values;
}

/** The value of one input, or undefined when the deployment has none of that name. */
export function inputValue(deployment: Deployment, name: string): unknown {
  return deployment.inputs.findLast((input) => input.name === name)?.value;
}

/** Options of inputEnv. */
export interface InputEnvOptions {
  /** Also pass CREDENTIAL_INPUTS (deploy_password, deploy_signal_id). Default false. */
  includeCredentials?: boolean;
}

/** What inputEnv made, and what it could not pass. */
export interface InputEnv {
  /** Env vars: one per input, strings as they are, other values as JSON. */
  env: Record<string, string>;
  /** Why an input was left out (a name or value no environment can hold). */
  skipped: string[];
}

/**
 * The tool's environment additions: one variable per input (strings as-is, everything else JSON). Names with
 * `=` or NUL and values with NUL cannot be env vars: they are skipped and listed. Credential inputs are left
 * out unless includeCredentials.
 */
export function inputEnv(deployment: Deployment, options: InputEnvOptions = {}): InputEnv {
  const env: Record<string, string> = {};
  const skipped: string[] = [];
  for (const input of deployment.inputs) {
    if (!options.includeCredentials && CREDENTIAL_INPUTS.has(input.name)) continue;
    const value = stringify(input.value);
    if (input.name.includes('=') || input.name.includes('\0'))
      skipped.push(`input ${JSON.stringify(input.name)}: name cannot be an env var`);
    else if (value.includes('\0')) skipped.push(`input ${JSON.stringify(input.name)}: value contains a NUL byte`);
    else env[input.name] = value;
  }
  return { env, skipped };
}
