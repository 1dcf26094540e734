// The template tree: every file under the root except `*.oac` is a template for the file at the
// same relative path under the output root. Executable templates are run with the metadata as
// JSON on stdin; the rest are mustache.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { readFileControl, type FileControl } from './control-file.ts';
import { ApplyConfigError } from './errors.ts';
import { pyJsonDumps, type PyDict } from '@hearth/agent-kit/python-json';
import { renderMustache } from './render.ts';

/** Suffix of a control file beside its template. */
export const CONTROL_FILE_SUFFIX = '.oac';

/** One template: where it is, and where its output goes relative to the output root. */
export interface TemplateFile {
  /** Absolute path of the template. */
  source: string;
  /** Path under the output root, without a leading slash (e.g. `etc/os-collect-config.conf`). */
  target: string;
}

/** One rendered file, ready to write. */
export interface RenderedFile extends FileControl {
  target: string;
  body: string;
}

/**
 * Every template under `root`, depth first in name order (a missing root has none). As the
 * original's os.walk, a symlink to a directory is neither entered nor a template.
 */
export function templatePaths(root: string): TemplateFile[] {
  const found: TemplateFile[] = [];
  const walk = (dir: string): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isSymbolicLink() && isDirectory(path)) continue;
      else if (!entry.name.endsWith(CONTROL_FILE_SUFFIX)) found.push({ source: path, target: relative(root, path) });
    }
  };
  walk(root);
  return found;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Runs an executable template with the metadata (json.dumps) on stdin; its stdout is the file. */
export function renderExecutable(path: string, config: PyDict): string {
  // `-t .` makes paths like `hostname` (join drops the `./` os.walk keeps): without a slash, spawn would search PATH.
  const command = path.includes('/') ? path : `./${path}`;
  const result = spawnSync(command, [], { input: pyJsonDumps(config), maxBuffer: 256 * 1024 * 1024 });
  const stdout = result.stdout ?? Buffer.alloc(0);
  const stderr = result.stderr ?? Buffer.alloc(0);
  // A script that exits without reading its stdin is fine (EPIPE), as for the original.
  const error = result.error && 'code' in result.error && result.error.code === 'EPIPE' ? undefined : result.error;
  if (error || result.status !== 0) {
    const why = error ? error.message : result.signal ? `killed by ${result.signal}` : `exit ${result.status}`;
    throw new ApplyConfigError(
      `config script failed: ${path} (${why})\n\nwith output:\n\n${stdout.toString('utf8')}${stderr.toString('utf8')}`,
    );
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(stdout);
  } catch {
    throw new ApplyConfigError(`config script ${path} printed output that is not UTF-8`);
  }
}

/** Renders one template (executable or mustache). */
export function renderTemplate(path: string, config: PyDict): string {
  if (isExecutableFile(path)) return renderExecutable(path, config);
  let text: string;
  try {
    // As Python's text-mode open(): a BOM is kept as text, and \r\n or a lone \r reads as \n.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(readFileSync(path)).replace(/\r\n?/g, '\n');
  } catch (error) {
    throw new ApplyConfigError(`could not render moustache template ${path}: ${(error as Error).message}`);
  }
  try {
    return renderMustache(text, config);
  } catch (error) {
    throw new ApplyConfigError(`could not render moustache template ${path}: ${(error as Error).message}`);
  }
}

/** Renders every template and reads its control file; the first error aborts (nothing written yet). */
export function buildTree(templates: readonly TemplateFile[], config: PyDict): RenderedFile[] {
  return templates.map(({ source, target }) => {
    try {
      const body = renderTemplate(source, config);
      return { target, body, ...readFileControl(source + CONTROL_FILE_SUFFIX) };
    } catch (error) {
      if (error instanceof ApplyConfigError) throw new ApplyConfigError(`${error.message} (template ${source})`);
      throw error;
    }
  });
}
