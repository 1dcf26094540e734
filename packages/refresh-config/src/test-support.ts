// Temp dirs with real scripts for this package's tests.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';

/** A fresh temp dir removed after the test. */
export function tempDir(t: TestContext, prefix = 'hearth-refresh-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Writes an executable `#!/bin/sh` script (or a file with `mode`) at `path`, creating its directory. */
export function writeScript(path: string, body: string, mode = 0o755): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, body.startsWith('#!') ? body : `#!/bin/sh\n${body}\n`);
  chmodSync(path, mode);
  return path;
}

/** A script that appends `<label>` to the file named by $TRACE. */
export function tracingScript(path: string, label: string, extra = ''): string {
  return writeScript(path, `echo "${label}" >> "$TRACE"\n${extra}`);
}

/** The lines appended to a trace file (none if it does not exist). */
export function readTrace(path: string): string[] {
  try {
    return readFileSync(path, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** A writable stream that keeps what is written. */
export function memoryStream(): NodeJS.WritableStream & { text(): string } {
  const chunks: string[] = [];
  return {
    write(chunk: string | Uint8Array) {
      chunks.push(String(chunk));
      return true;
    },
    text: () => chunks.join(''),
  } as unknown as NodeJS.WritableStream & { text(): string };
}
