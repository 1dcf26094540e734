// Which files dib-run-parts runs and sources, and in which order.
import { accessSync, constants, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { compareBytes, compareNumericThenBytes } from './sort-order.ts';

/** dib-run-parts' default `RUN_PARTS_REGEX`: names with a '.' (e.g. `foo.sh`, `foo.dpkg-old`) are skipped. */
export const DEFAULT_RUN_PARTS_REGEX = '^[0-9A-Za-z_-]+$';

/** Names an environment.d file may have (dib-run-parts' `/[0-9A-Za-z_.-]+$` on the path). */
const ENVIRONMENT_FILE_NAME = /^[0-9A-Za-z_.-]+$/;

/** True for a regular file, or a symlink that resolves to one (find's `-xtype f`). */
function isRegularFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Compiles a `RUN_PARTS_REGEX` value; an invalid one is a usage error that names it. */
export function runPartsPattern(source: string = DEFAULT_RUN_PARTS_REGEX): RegExp {
  try {
    return new RegExp(source);
  } catch (error) {
    throw new Error(`RUN_PARTS_REGEX is not a valid regular expression (${JSON.stringify(source)}): ${(error as Error).message}`);
  }
}

/**
 * The names dib-run-parts would run in `dir`, in its order: entries directly in `dir` that are
 * regular files (or symlinks to one), executable by us, and match `pattern`; sorted by leading
 * number, then C byte order. Subdirectories are never entered.
 */
export function listParts(dir: string, pattern: RegExp = runPartsPattern()): string[] {
  return readdirSync(dir)
    .filter((name) => pattern.test(name))
    .filter((name) => isRegularFile(join(dir, name)) && isExecutable(join(dir, name)))
    .sort(compareNumericThenBytes);
}

/**
 * The files dib-run-parts sources before running `dir`: regular files (executable or not) in
 * `<dir>/../environment.d` named `[0-9A-Za-z_.-]+`, in C byte order (dib-run-parts sorts their full
 * paths with `sort -n`, which leaves byte order). Paths are spelled as dib-run-parts spells them.
 * None when the directory does not exist.
 */
export function listEnvironmentFiles(dir: string): string[] {
  const environmentDir = `${dir}/../environment.d`;
  let names: string[];
  try {
    if (!statSync(environmentDir).isDirectory()) return [];
    names = readdirSync(environmentDir);
  } catch {
    return [];
  }
  // Not path.join: it would drop `<dir>/..` by spelling, where the kernel (and bash) go up from where a symlinked `dir` points.
  return names
    .map((name) => ({ name, path: `${environmentDir}/${name}` }))
    .filter(({ name, path }) => ENVIRONMENT_FILE_NAME.test(name) && isRegularFile(path))
    .sort((a, b) => compareBytes(a.name, b.name))
    .map(({ path }) => path);
}
