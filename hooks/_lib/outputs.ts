import { readFileSync, rmSync } from 'node:fs';
import type { Deployment } from './deployment.ts';

/** Output names are file-name suffixes: nothing that could name a file elsewhere. */
function usableName(name: string): boolean {
  return !name.includes('/') && !name.includes('\0');
}

/** The base path a tool writes outputs to (`heat_outputs_path`): `<outputs dir>/<id>`. */
export function outputsBase(outputsDir: string, deployment: Deployment): string {
  return `${outputsDir.replace(/\/+$/, '')}/${deployment.id}`;
}

/**
 * Removes `<base>.<name>` for every declared output, so a deployment run again (after a crash) never reports a
 * value left by the earlier run. Missing files are fine.
 */
export function clearOutputs(base: string, deployment: Deployment): void {
  for (const output of deployment.outputs) {
    if (usableName(output.name)) rmSync(`${base}.${output.name}`, { force: true });
  }
}

/**
 * Reads `<base>.<name>` for every declared output: the whole file as a string, trailing newline kept; a missing
 * or unreadable file leaves that output out. Names with `/` are never read.
 */
export function collectOutputs(base: string, deployment: Deployment): Record<string, string> {
  const values: Record<string, string> = {};
  for (const output of deployment.outputs) {
    if (!usableName(output.name)) continue;
    try {
      values[output.name] = readFileSync(`${base}.${output.name}`, 'utf8');
    } catch {
      // Missing output file: the output is omitted, as the original hooks do.
    }
  }
  return values;
}
