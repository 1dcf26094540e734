import { closeSync, constants, fstatSync, openSync, readSync, rmSync } from 'node:fs';
import type { Deployment } from './deployment.ts';

/**
 * Most bytes read of one output file, its end kept: 1 MiB, the whole signal body heat-config-notify may send
 * (it trims further, keeping ends too), so a longer value could never arrive whole anyway.
 */
export const MAX_OUTPUT_FILE_BYTES = 1024 * 1024;

/**
 * Most bytes read of all output files together, shared fairly (short files whole, long ones split the rest):
 * 2 MiB, twice what a signal carries, so that the result line stays far below the 16 MiB of a hook's stdout
 * heat-config reads (past that the result JSON is cut: the deployment fails as unreadable, its real status lost).
 */
export const MAX_OUTPUTS_TOTAL_BYTES = 2 * 1024 * 1024;

/** The line put in front of an output value whose beginning was not read. */
export function outputCutMarker(name: string, cutBytes: number): string {
  return `[hook: the first ${cutBytes} bytes of output ${name} were cut]\n`;
}

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

/** An output file opened for reading, or undefined when it is missing, unreadable or not a regular file. */
function openOutput(path: string): { fd: number; size: number } | undefined {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO left as an output file must not block the hook forever (it is then refused below).
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  const stat = fstatSync(fd);
  if (stat.isFile()) return { fd, size: stat.size };
  closeSync(fd);
  return undefined;
}

/** The last `budget` bytes of an open file of `size` bytes, starting on a UTF-8 character boundary. */
function readTail(fd: number, size: number, budget: number): { text: string; cutBytes: number } {
  const start = Math.max(0, size - budget);
  const buffer = Buffer.alloc(size - start);
  let read = 0;
  while (read < buffer.length) {
    const n = readSync(fd, buffer, read, buffer.length - read, start + read);
    if (n === 0) break;
    read += n;
  }
  let skip = 0;
  // Bytes 10xxxxxx continue a character that began before the cut: they start no character of their own.
  if (start > 0) while (skip < Math.min(read, 3) && (buffer[skip]! & 0xc0) === 0x80) skip += 1;
  return { text: buffer.subarray(skip, read).toString('utf8'), cutBytes: start + skip };
}

/** Bytes per file, fairest first: files under the equal share are read whole, the rest split what is left. */
function fairBudgets(sizes: number[], total: number): number[] {
  const order = sizes.map((size, index) => ({ size, index })).sort((a, b) => a.size - b.size);
  const budgets = new Array<number>(sizes.length).fill(0);
  let left = total;
  order.forEach(({ size, index }, rank) => {
    budgets[index] = Math.min(size, MAX_OUTPUT_FILE_BYTES, Math.floor(left / (order.length - rank)));
    left -= budgets[index];
  });
  return budgets;
}

/**
 * Reads `<base>.<name>` for every declared output: the file as a string, trailing newline kept; at most the last
 * MAX_OUTPUT_FILE_BYTES of one file and MAX_OUTPUTS_TOTAL_BYTES of all, behind a line saying how many bytes were
 * cut. A missing or unreadable file, or one that is not a regular file (a FIFO, a device), leaves that output
 * out. Names with `/` are never read.
 */
export function collectOutputs(base: string, deployment: Deployment): Record<string, string> {
  const files: Array<{ name: string; fd: number; size: number }> = [];
  try {
    for (const output of deployment.outputs) {
      if (!usableName(output.name) || files.some((file) => file.name === output.name)) continue;
      const opened = openOutput(`${base}.${output.name}`);
      if (opened) files.push({ name: output.name, ...opened });
    }
    const budgets = fairBudgets(
      files.map((file) => file.size),
      MAX_OUTPUTS_TOTAL_BYTES,
    );
    const values: Record<string, string> = {};
    files.forEach((file, index) => {
      const { text, cutBytes } = readTail(file.fd, file.size, budgets[index]!);
      values[file.name] = cutBytes > 0 ? outputCutMarker(file.name, cutBytes) + text : text;
    });
    return values;
  } finally {
    for (const file of files) closeSync(file.fd);
  }
}
