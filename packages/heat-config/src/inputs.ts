// Deployment inputs converted by their declared type. 55-heat-config ran Python's str() on String
// inputs only (`True`, `None`, `{'a': 1}`) and left the rest alone, so a Number 3 crashed the script
// hook. Here every value comes out as a string, a list of strings, or (Json only) an object or list:
// the shapes every heat-agents hook, old or new, accepts.

/** The input types Heat declares. A missing type means String. */
export const INPUT_TYPES = ['String', 'Number', 'Boolean', 'Json', 'CommaDelimitedList'] as const;

/** One of INPUT_TYPES. */
export type InputType = (typeof INPUT_TYPES)[number];

/** An input as it reaches a hook: `name`, `type`, `value`, plus whatever else Heat put there. */
export interface DeploymentInput {
  name: string;
  type?: string;
  value: unknown;
  [key: string]: unknown;
}

/** The converted inputs and what was odd about them (input names and types only, never values). */
export interface InputConversion {
  inputs: DeploymentInput[];
  warnings: string[];
}

const TRUE_WORDS = new Set(['true', 't', 'yes', 'y', 'on', '1']);
const FALSE_WORDS = new Set(['false', 'f', 'no', 'n', 'off', '0']);
const NUMBER_TEXT = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A value as text the way a user writes it: `true`, `3`, `1.5`, JSON for objects and lists, '' for null. */
export function inputText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value) ?? '';
}

type Converted = { value: unknown; problem?: string };

function toNumber(value: unknown): Converted {
  if (typeof value === 'number')
    return Number.isFinite(value) ? { value: String(value) } : { value: '', problem: 'is not a finite number' };
  if (typeof value === 'string' && NUMBER_TEXT.test(value.trim())) return { value: value.trim() };
  if (value === null || value === undefined) return { value: '' };
  return { value: inputText(value), problem: 'is not a number; passed as text' };
}

function toBoolean(value: unknown): Converted {
  if (typeof value === 'boolean') return { value: String(value) };
  if (value === null || value === undefined) return { value: '' };
  const word = inputText(value).trim().toLowerCase();
  if (TRUE_WORDS.has(word)) return { value: 'true' };
  if (FALSE_WORDS.has(word)) return { value: 'false' };
  return { value: inputText(value), problem: 'is not a boolean; passed as text' };
}

function toJson(value: unknown): Converted {
  if (typeof value === 'object' && value !== null) return { value };
  if (typeof value !== 'string') return { value: inputText(value) };
  try {
    const parsed: unknown = JSON.parse(value);
    return { value: typeof parsed === 'object' && parsed !== null ? parsed : value };
  } catch {
    return { value, problem: 'is not valid JSON; passed as text' };
  }
}

function toList(value: unknown): Converted {
  if (Array.isArray(value)) return { value: value.map(inputText) };
  if (isRecord(value)) return { value: [inputText(value)], problem: 'is an object, not a list; passed as a one-item list' };
  if (value === null || value === undefined) return { value: [] };
  return { value: inputText(value) };
}

/** Converts one value by its declared type (undefined type = String); `problem` says what did not fit. */
export function convertInputValue(type: unknown, value: unknown): Converted {
  switch (type ?? 'String') {
    case 'String':
      return { value: inputText(value) };
    case 'Number':
      return toNumber(value);
    case 'Boolean':
      return toBoolean(value);
    case 'Json':
      return toJson(value);
    case 'CommaDelimitedList':
      return toList(value);
    default:
      if (typeof value === 'object' && value !== null) return { value };
      return { value: inputText(value), problem: `has unknown type ${JSON.stringify(type)}; passed as text` };
  }
}

/**
 * Converts every input of a deployment. Entries that are not objects with a string `name` are
 * dropped (hooks index inputs by name); a missing `value` counts as null.
 */
export function convertInputs(inputs: unknown): InputConversion {
  const warnings: string[] = [];
  if (inputs === undefined || inputs === null) return { inputs: [], warnings };
  if (!Array.isArray(inputs)) return { inputs: [], warnings: [`inputs is a ${typeof inputs}, not a list; no inputs passed`] };
  const converted: DeploymentInput[] = [];
  inputs.forEach((input: unknown, index) => {
    if (!isRecord(input) || typeof input.name !== 'string') {
      warnings.push(`input #${index} has no name; dropped`);
      return;
    }
    const { value, problem } = convertInputValue(input.type, input.value);
    if (problem !== undefined) warnings.push(`input ${input.name} (${inputText(input.type ?? 'String')}) ${problem}`);
    converted.push({ ...input, name: input.name, value });
  });
  return { inputs: converted, warnings };
}
