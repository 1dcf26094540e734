import { constants, type Stats } from 'node:fs';
import { mkdir, open, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { removeStaleTempFiles, writeFileAtomic } from './atomic-file.ts';
import { withLock } from './lock.ts';
import type { SecretStore } from './secret-store.ts';
import { SecretStoreError, checkSecretName, checkSecretValue } from './secret-store-error.ts';

/** The widest mode the secret file may have. */
const FILE_MODE = 0o600;
/** The widest mode the directory holding it may have. */
const DIR_MODE = 0o700;
/** How long a set/delete waits for another process's set/delete on the same file. */
const LOCK_TIMEOUT_MS = 30_000;

/** One thing wrong with the file or its directory, and the command that fixes it. */
interface Problem {
  what: string;
  fix: string;
}

/** `/a b` -> `'/a b'`; plain paths stay as they are. */
function shellQuote(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}

/** 0o100644 -> `0644`. */
function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}

/** Owner other than us, or permission bits beyond `allowed`. */
function ownerAndModeProblems(kind: string, path: string, stats: Stats, allowed: number): Problem[] {
  const problems: Problem[] = [];
  const uid = process.getuid!();
  if (stats.uid !== uid) {
    problems.push({
      what: `${kind} ${path} is owned by uid ${stats.uid}, not by uid ${uid} that runs this agent`,
      fix: `chown ${uid} ${shellQuote(path)}`,
    });
  }
  if ((stats.mode & 0o7777 & ~allowed) !== 0) {
    problems.push({
      what: `${kind} ${path} has mode ${octal(stats.mode)}, wider than ${octal(allowed)}`,
      fix: `chmod ${allowed.toString(8)} ${shellQuote(path)}`,
    });
  }
  return problems;
}

/** Throws ERR_SECRET_FILE_UNSAFE listing every problem and one command line that fixes them all. */
function refuse(path: string, problems: Problem[]): never {
  const fixes = problems.filter((problem) => problem.fix !== '').map((problem) => problem.fix);
  const fix = fixes.length > 0 ? `; fix: ${fixes.join(' && ')}` : '';
  throw new SecretStoreError(
    'ERR_SECRET_FILE_UNSAFE',
    `refusing to use secret file ${path}: ${problems.map((problem) => problem.what).join('; ')}${fix}`,
  );
}

/** Parses the file's JSON object of name -> value; the message of a bad file never quotes its content. */
function parseSecrets(path: string, text: string): Map<string, string> {
  const secrets = new Map<string, string>();
  if (text.trim() === '') return secrets;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SecretStoreError(
      'ERR_SECRET_FILE_CORRUPT',
      `secret file ${path} is not valid JSON; restore it from a backup or remove it and set the secrets again`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new SecretStoreError('ERR_SECRET_FILE_CORRUPT', `secret file ${path} must hold a JSON object of name -> string value`);
  }
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value !== 'string') {
      throw new SecretStoreError(
        'ERR_SECRET_FILE_CORRUPT',
        `secret file ${path}: the value of ${JSON.stringify(name)} is a ${typeof value}, not a string`,
      );
    }
    secrets.set(name, value);
  }
  return secrets;
}

/** The secrets in `path` (empty when the file or its directory does not exist), after checking both are ours alone. */
async function readSecrets(path: string): Promise<Map<string, string>> {
  const dir = dirname(path);
  let dirStats: Stats;
  try {
    dirStats = await stat(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw error;
  }
  if (!dirStats.isDirectory()) refuse(path, [{ what: `${dir} is not a directory`, fix: '' }]);
  const problems = ownerAndModeProblems('directory', dir, dirStats, DIR_MODE);
  let file;
  try {
    file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') refuse(path, [...problems, { what: `${path} is a symbolic link, not a regular file`, fix: '' }]);
    if (code !== 'ENOENT') throw error;
    if (problems.length > 0) refuse(path, problems);
    return new Map();
  }
  try {
    const fileStats = await file.stat();
    if (!fileStats.isFile()) refuse(path, [...problems, { what: `${path} is not a regular file`, fix: '' }]);
    problems.push(...ownerAndModeProblems('file', path, fileStats, FILE_MODE));
    if (problems.length > 0) refuse(path, problems);
    return parseSecrets(path, await file.readFile('utf8'));
  } finally {
    await file.close();
  }
}

/** `{ "name": "value", ... }` with sorted names, one per line. */
function serializeSecrets(secrets: Map<string, string>): string {
  const sorted = [...secrets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(Object.fromEntries(sorted), null, 2) + '\n';
}

/**
 * The default backend: a JSON object of name -> value in `path`, mode 0600 in a 0700 directory, both owned by the
 * uid running the agent (root in a VM). Every operation refuses a file or directory whose mode is wider or whose
 * owner differs (the error says which chmod/chown fixes it); a change is written atomically under a lock.
 */
export function createFileSecretStore(path: string): SecretStore {
  const dir = dirname(path);
  const lockPath = join(dir, `.${basename(path)}.lock`);

  /** Runs `change` on the current secrets under the lock; writes the file when it returns true. */
  async function update<T>(change: (secrets: Map<string, string>) => { changed: boolean; result: T }): Promise<T> {
    await mkdir(dir, { recursive: true, mode: DIR_MODE });
    return withLock(
      lockPath,
      async () => {
        const secrets = await readSecrets(path);
        // A writer killed between its temp file and the rename left a copy of the secrets that nothing else removes.
        removeStaleTempFiles(dir);
        const { changed, result } = change(secrets);
        if (changed) await writeFileAtomic(path, serializeSecrets(secrets), { mode: FILE_MODE });
        return result;
      },
      { wait: true, timeoutMs: LOCK_TIMEOUT_MS },
    );
  }

  return Object.freeze({
    backend: 'file' as const,
    location: path,
    async get(name: string): Promise<string | undefined> {
      checkSecretName(name);
      return (await readSecrets(path)).get(name);
    },
    async set(name: string, value: string): Promise<void> {
      checkSecretName(name);
      checkSecretValue(name, value);
      await update((secrets) => {
        const changed = secrets.get(name) !== value;
        secrets.set(name, value);
        return { changed, result: undefined };
      });
    },
    async delete(name: string): Promise<boolean> {
      checkSecretName(name);
      if (!(await readSecrets(path)).has(name)) return false;
      return update((secrets) => {
        const existed = secrets.delete(name);
        return { changed: existed, result: existed };
      });
    },
    async list(): Promise<string[]> {
      return [...(await readSecrets(path)).keys()].sort();
    },
  });
}
