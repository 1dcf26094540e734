import { removeStaleTempFiles, writeFileAtomicSync } from '@hearth/agent-kit/atomic-file';
import { parsePyJson, pyPlainData } from '@hearth/agent-kit/python-json';
import { mkdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute } from 'node:path';
import {
  describeValue,
  failedResult,
  hookResult,
  isObject,
  pythonJson,
  runHook,
  type HookContext,
  type HookResult,
} from '../_lib/index.ts';

const USAGE = `usage: json-file < deployment.json

heat-config hook for group "json-file": the config maps absolute file paths to data; each file is
written as JSON the way Python's json.dumps(data, indent=4, sort_keys=True) writes it (non-ASCII
escaped as \\uXXXX, no trailing newline). Missing parent directories are created with mode 0700; a
new file's mode comes from the umask, an existing file keeps its mode and owner. Each file is replaced whole
(a temp file renamed over it): a reader never sees it cut. Relative paths are refused.
Prints {deploy_stdout: "", deploy_stderr, deploy_status_code: 0, or 1 when a file could not be written}.
`;

/** The config as a path -> data map: an object, JSON text of one, or null (nothing to write). */
function filesOf(config: unknown): Record<string, unknown> | string {
  if (config === null || config === '') return {};
  let parsed: unknown = config;
  if (typeof config === 'string') {
    try {
      // As the deployment itself: floats keep their form (`1.0`), big integers their digits.
      parsed = pyPlainData(parsePyJson(config));
    } catch {
      return `config must map absolute file paths to data (an object or JSON text of one), got ${describeValue(config)}`;
    }
  }
  return isObject(parsed) ? parsed : `config must map absolute file paths to data, got ${describeValue(config)}`;
}

/**
 * Replaces the file at `path` (a symlink: the file it names) with `text` atomically (writeFileAtomicSync), keeping
 * the existing file's mode and owner (a new file: 0666 less the umask). The original truncated the file and wrote
 * into it: a write cut short (a full disk, the hook killed) left the file cut, and a reader could see it half
 * written. Temp files of writers that died are removed first (they hold the config).
 */
function replaceFile(path: string, text: string): void {
  let target = path;
  try {
    target = realpathSync(path);
  } catch {
    // a new file
  }
  const existing = statSync(target, { throwIfNoEntry: false });
  removeStaleTempFiles(dirname(target));
  writeFileAtomicSync(target, text, {
    mode: existing ? existing.mode & 0o7777 : 0o666 & ~process.umask(),
    ...(existing && (existing.uid !== process.geteuid?.() || existing.gid !== process.getegid?.())
      ? { owner: { uid: existing.uid, gid: existing.gid } }
      : {}),
  });
}

/** Writes each file of the config; a file that cannot be written fails the deployment but not the others. */
async function writeJsonFiles({ deployment, log }: HookContext): Promise<HookResult> {
  const files = filesOf(deployment.config);
  if (typeof files === 'string') return failedResult(`json-file hook: ${files}`);
  const errors: string[] = [];
  for (const [path, data] of Object.entries(files)) {
    if (!isAbsolute(path)) {
      errors.push(`${JSON.stringify(path)} is not an absolute path: not written`);
      continue;
    }
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      replaceFile(path, pythonJson(data, { sortKeys: true }));
      log.info('wrote file', { path });
    } catch (error) {
      errors.push(`${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  for (const error of errors) log.error(error);
  return hookResult({
    stdout: '',
    stderr: errors.map((error) => `json-file hook: ${error}\n`).join(''),
    status: errors.length > 0 ? 1 : 0,
  });
}

runHook({ group: 'json-file', usage: USAGE, run: writeJsonFiles });
