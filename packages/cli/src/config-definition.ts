import type { ConfigInput, ConfigOutput, JsonObject, ParameterType, SoftwareConfigCreate } from '@hearth/protocol';
import { load } from 'js-yaml';
import { usageError, type ExitError } from './errors.ts';
import { coerceDefault, parseInputDeclaration, parseInputType } from './flag-values.ts';
import { NOT_UTF8 } from './io.ts';
import { MAX_CONFIG_REQUEST_BYTES, MAX_CONFIG_TEXT_LENGTH } from './protocol-values.ts';

/** The flags of `config create`, as commander hands them over. */
export interface ConfigCreateFlags {
  group: string;
  config?: string | undefined;
  configFile?: string | undefined;
  definitionFile?: string | undefined;
  input?: string[] | undefined;
  inputType?: string[] | undefined;
  output?: string[] | undefined;
  errorOutput?: string[] | undefined;
  optionsFile?: string | undefined;
}

/** Reads a file named by a flag; the flag name goes into errors. */
export type FileReader = (path: string) => Promise<string>;

/** True for a plain object (not an array, not null). */
function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The usage error for a file named by `flag` that could not be read as text. */
function unreadable(flag: string, path: string, error: unknown): ExitError {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === NOT_UTF8) {
    const binary = flag === '--config-file' ? ', or base64-encode binary data and decode it in the script' : '';
    return usageError(`${flag} ${path} is not UTF-8 text`, `convert the file to UTF-8 (iconv -t UTF-8)${binary}`);
  }
  return usageError(`${flag} ${path}: cannot read it (${code ?? String(error)})`);
}

/** Reads and parses a JSON or YAML file named by `flag`; a problem is a usage error naming file and flag. */
export async function readStructuredFile(path: string, flag: string, readFile: FileReader): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path);
  } catch (error) {
    throw unreadable(flag, path, error);
  }
  try {
    return load(text);
  } catch (error) {
    throw usageError(`${flag} ${path} is neither JSON nor YAML: ${(error as Error).message.split('\n')[0] ?? ''}`);
  }
}

/** The parts of a Heat definition file (`inputs`, `outputs`, `options`), checked for shape. */
export function checkDefinition(value: unknown, path: string): { inputs: ConfigInput[]; outputs: ConfigOutput[]; options: JsonObject } {
  const where = `--definition-file ${path}`;
  if (value === undefined || value === null) return { inputs: [], outputs: [], options: {} };
  if (!isObject(value)) throw usageError(`${where} must hold a mapping with inputs, outputs and/or options`);
  const unknown = Object.keys(value).filter((key) => !['inputs', 'outputs', 'options'].includes(key));
  if (unknown.length > 0) throw usageError(`${where} has unknown keys ${unknown.join(', ')}: only inputs, outputs and options are read`);
  const list = (key: 'inputs' | 'outputs'): Array<Record<string, unknown>> => {
    const items = value[key] ?? [];
    if (!Array.isArray(items) || !items.every((item) => isObject(item) && typeof item.name === 'string' && item.name !== '')) {
      throw usageError(`${where}: ${key} must be a list of mappings, each with a name`);
    }
    return items as Array<Record<string, unknown>>;
  };
  const options = value.options ?? {};
  if (!isObject(options)) throw usageError(`${where}: options must be a mapping`);
  // Entries keep any further keys; hearth-server checks them against the protocol schema.
  return { inputs: list('inputs') as ConfigInput[], outputs: list('outputs') as ConfigOutput[], options };
}

/** Puts `item` in place of the entry of the same name, or at the end. */
function upsert<T extends { name: string }>(items: T[], item: T): void {
  const at = items.findIndex((existing) => existing.name === item.name);
  if (at === -1) items.push(item);
  else items[at] = item;
}

/** Builds the config text from --config or --config-file (exactly one). */
async function configText(flags: ConfigCreateFlags, readFile: FileReader): Promise<string> {
  if ((flags.config === undefined) === (flags.configFile === undefined)) {
    throw usageError('give the config body with exactly one of --config TEXT or --config-file FILE');
  }
  if (flags.config !== undefined) return flags.config;
  const path = flags.configFile ?? '';
  try {
    return await readFile(path);
  } catch (error) {
    throw unreadable('--config-file', path, error);
  }
}

/** Characters as hearth-server counts them (code points, not UTF-16 units). */
function characterCount(text: string): number {
  if (text.length <= MAX_CONFIG_TEXT_LENGTH) return text.length;
  let count = 0;
  for (const _char of text) count += 1;
  return count;
}

/** A size in MiB for messages: `6.2 MiB`. */
function mebibytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/**
 * Refuses a config hearth-server would refuse for its size, before uploading it: an upload over the
 * server's body limit is cut off mid-way and would read as "cannot reach hearth-server".
 */
export function checkConfigSize(body: SoftwareConfigCreate, flags: Pick<ConfigCreateFlags, 'configFile'>): void {
  const source = flags.configFile === undefined ? 'the --config text' : `--config-file ${flags.configFile}`;
  const hint = 'keep big payloads out of the config: let the script fetch them, or split the config';
  const text = typeof body.config === 'string' ? body.config : '';
  const characters = characterCount(text);
  if (characters > MAX_CONFIG_TEXT_LENGTH) {
    throw usageError(
      `${source} has ${characters} characters: hearth-server takes a config body of at most ${MAX_CONFIG_TEXT_LENGTH} (4 MiB)`,
      hint,
    );
  }
  const bytes = Buffer.byteLength(JSON.stringify(body));
  if (bytes > MAX_CONFIG_REQUEST_BYTES) {
    throw usageError(
      `${source} makes a request of ${mebibytes(bytes)} (as JSON, UTF-8): hearth-server reads at most ${mebibytes(MAX_CONFIG_REQUEST_BYTES)} per config`,
      hint,
    );
  }
}

/** Turns `config create` flags (and the files they name) into the POST /software_configs body. */
export async function buildConfigCreate(name: string, flags: ConfigCreateFlags, readFile: FileReader): Promise<SoftwareConfigCreate> {
  // hearth-server stores any group, but no hook runs '' (an unset `--group "$GROUP"`): the deployment would fail on the VM.
  if (flags.group.trim() === '') {
    throw usageError(`--group ${JSON.stringify(flags.group)} is empty`, 'name the hook that runs the config, e.g. --group script');
  }
  const config = await configText(flags, readFile);
  const definition =
    flags.definitionFile === undefined
      ? checkDefinition(undefined, '')
      : checkDefinition(await readStructuredFile(flags.definitionFile, '--definition-file', readFile), flags.definitionFile);

  const inputs = definition.inputs.map((input) => ({ ...input }));
  const declared = (flags.input ?? []).map(parseInputDeclaration);
  const types = new Map<string, ParameterType>((flags.inputType ?? []).map(parseInputType).map((t) => [t.name, t.type]));
  for (const { name: inputName, default: text } of declared) {
    const existing = inputs.find((input) => input.name === inputName);
    const input: ConfigInput = { ...existing, name: inputName };
    if (text !== undefined) input.default = text;
    upsert(inputs, input);
  }
  for (const [inputName, type] of types) {
    const input = inputs.find((candidate) => candidate.name === inputName);
    if (input === undefined) throw usageError(`--input-type ${inputName}=${type} names no input: declare it with --input ${inputName}`);
    input.type = type;
  }
  for (const { name: inputName, default: text } of declared) {
    const type = types.get(inputName);
    const input = inputs.find((candidate) => candidate.name === inputName);
    if (input !== undefined && text !== undefined && type !== undefined) input.default = coerceDefault(inputName, text, type);
  }

  const outputs = definition.outputs.map((output) => ({ ...output }));
  for (const outputName of flags.output ?? []) upsert(outputs, { ...outputs.find((o) => o.name === outputName), name: outputName });
  for (const outputName of flags.errorOutput ?? []) {
    upsert(outputs, { ...outputs.find((o) => o.name === outputName), name: outputName, error_output: true });
  }

  let options = definition.options;
  if (flags.optionsFile !== undefined) {
    const fileOptions = await readStructuredFile(flags.optionsFile, '--options-file', readFile);
    if (!isObject(fileOptions)) throw usageError(`--options-file ${flags.optionsFile} must hold a mapping (JSON object or YAML map)`);
    options = { ...options, ...fileOptions };
  }
  const body = { name, group: flags.group, config, inputs, outputs, options };
  checkConfigSize(body, flags);
  return body;
}
