/** The deployment a hook reads on stdin: one entry of the `deployments` metadata list, as Heat writes it. */
import { jsNumbers, parsePyJson, pyPlainData, PyBigInt, PyFloat } from '@hearth/agent-kit/python-json';
import { pyFloatRepr } from '@hearth/agent-kit/python-float';

/** One input of a deployment: `{name, type, value}` as Heat sends it (type defaults to String). */
export interface DeploymentInput {
  /** Input name; becomes an env var, a fact or a variable depending on the hook. */
  name: string;
  /** Declared type: String, Number, Boolean, Json or CommaDelimitedList (anything else is kept as given). Default String. */
  type: string;
  /** The value, converted by its declared type (see convertInput); floats kept as PyFloat when the conversion keeps the value. */
  value: unknown;
}

/** One declared output of a deployment. */
export interface DeploymentOutput {
  /** Output name; the hook reads it from `<outputs>/<id>.<name>` or from the tool's own result. */
  name: string;
  /** Whether a non-empty value of this output marks the deployment failed (Heat's `error_output`). Default false. */
  errorOutput: boolean;
}

/** A deployment as a hook sees it, after validation and input conversion. */
export interface Deployment {
  /** Derived config id; names every file the hook writes. Only `[A-Za-z0-9._-]`, never `.` or `..`. */
  id: string;
  /** Deployment name (docker-compose's project dir, puppet's hiera file). Default the id. */
  name: string;
  /** The group (tool) name. Default `Heat::Ungrouped`. */
  group: string;
  /** `YYYY-MM-DDTHH:MM:SSZ`, or '' when absent. */
  creationTime: string;
  /** The config: script text, structured data, or null. Floats are PyFloat and integers beyond 2^53 PyBigInt (see parseDeployment). */
  config: unknown;
  /** Inputs in the order Heat gave them, values converted by type. */
  inputs: DeploymentInput[];
  /** Declared outputs. */
  outputs: DeploymentOutput[];
  /** Tool-specific options; {} when absent or not an object. */
  options: Record<string, unknown>;
}

/** The deployment on stdin cannot be used; the message says what was wrong and with which value. */
export class HookInputError extends Error {
  override readonly name = 'HookInputError';
}

/** Ids are used as file names: nothing that could climb out of the hook's directories. */
const SAFE_ID = /^[A-Za-z0-9._-]+$/;

/** Whether `value` is a plain JSON object (not null, not an array, not a PyFloat or PyBigInt). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof PyFloat || value instanceof PyBigInt);
}

/** A short rendering of an offending value for error messages. */
export function describeValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** The id as Python's `str()` writes it in the original's file names: numbers as text, `1.0` with its fraction. */
function idText(value: unknown): unknown {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (value instanceof PyFloat && Number.isFinite(value.value)) return pyFloatRepr(value.value);
  return value instanceof PyBigInt ? String(value.value) : value;
}

/** The id, checked: a non-empty string (or number) usable as a file name. */
function parseId(value: unknown): string {
  const id = idText(value);
  if (typeof id !== 'string' || !SAFE_ID.test(id) || id === '.' || id === '..') {
    throw new HookInputError(`deployment "id" must be a string of letters, digits, '.', '_' or '-' (got ${describeValue(value)})`);
  }
  return id;
}

/** The inputs list: entries without a string name are dropped (each with a warning); values converted by type. */
function parseInputs(value: unknown, warnings: string[], convert: (type: string, value: unknown) => unknown): DeploymentInput[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    warnings.push(`"inputs" is not a list, ignored (got ${describeValue(value)})`);
    return [];
  }
  const inputs: DeploymentInput[] = [];
  for (const entry of value as unknown[]) {
    if (!isObject(entry) || typeof entry.name !== 'string' || entry.name === '') {
      warnings.push(`input without a name ignored: ${describeValue(entry)}`);
      continue;
    }
    const type = typeof entry.type === 'string' && entry.type !== '' ? entry.type : 'String';
    const raw = 'value' in entry ? entry.value : entry.default;
    // Conversions know JSON.parse's numbers; a value they hand back unchanged keeps its Python form (1.0, 2^64).
    const plain = jsNumbers(raw);
    const converted = convert(type, plain);
    inputs.push({ name: entry.name, type, value: converted === plain ? raw : converted });
  }
  return inputs;
}

/** The outputs list: entries without a string name are dropped (each with a warning). */
function parseOutputs(value: unknown, warnings: string[]): DeploymentOutput[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    warnings.push(`"outputs" is not a list, ignored (got ${describeValue(value)})`);
    return [];
  }
  const outputs: DeploymentOutput[] = [];
  for (const entry of value as unknown[]) {
    if (!isObject(entry) || typeof entry.name !== 'string' || entry.name === '') {
      warnings.push(`output without a name ignored: ${describeValue(entry)}`);
      continue;
    }
    outputs.push({ name: entry.name, errorOutput: entry.error_output === true });
  }
  return outputs;
}

/** A string field, or `fallback` when absent or not a string. */
function stringField(value: unknown, fallback: string): string {
  return typeof value === 'string' && value !== '' ? value : fallback;
}

/**
 * Parses the deployment JSON a hook reads on stdin as Python's json.loads does, so that the data the hooks write
 * back keeps its form: a float is a PyFloat (`1.0` stays `1.0`), an integer beyond 2^53 a PyBigInt. Both
 * JSON.stringify as plain numbers; options hold plain numbers only (they are flags, never written back).
 * Throws HookInputError when the text is not a JSON object or has no usable id; anything else odd (inputs not
 * a list, an input without a name, options not an object) is dropped with a warning, so no input can crash a hook.
 */
export function parseDeployment(
  text: string,
  convert: (type: string, value: unknown) => unknown,
): { deployment: Deployment; warnings: string[] } {
  let document: unknown;
  try {
    document = pyPlainData(parsePyJson(text));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new HookInputError(
      `stdin is not a JSON deployment (${reason}); expected one object like {"id": ..., "config": ..., "inputs": [...]}`,
    );
  }
  if (!isObject(document)) throw new HookInputError(`stdin must be one JSON object, got ${describeValue(document)}`);
  const warnings: string[] = [];
  const id = parseId(document.id);
  if (document.options !== undefined && document.options !== null && !isObject(document.options)) {
    warnings.push(`"options" is not an object, ignored (got ${describeValue(document.options)})`);
  }
  const deployment: Deployment = {
    id,
    name: stringField(document.name, id),
    group: stringField(document.group, 'Heat::Ungrouped'),
    creationTime: stringField(document.creation_time, ''),
    config: document.config ?? null,
    inputs: parseInputs(document.inputs, warnings, convert),
    outputs: parseOutputs(document.outputs, warnings),
    options: isObject(document.options) ? (jsNumbers(document.options) as Record<string, unknown>) : {},
  };
  return { deployment, warnings };
}
