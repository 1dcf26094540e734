// Runs a hook's action through /bin/sh as its `runas` user with a real uid AND gid switch (the original only
// set the euid, so the action could set it back to root): spawn's uid/gid options after looking the user up.
import { spawn, spawnSync } from 'node:child_process';

/** A user's ids and home, as getent gives them. */
export interface UserEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/** Looks a user up by name or numeric uid (getent passwd: NSS included); undefined when unknown. */
export function lookupUser(user: string): UserEntry | undefined {
  const result = spawnSync('getent', ['passwd', user], { encoding: 'utf8' });
  if (result.status !== 0) return undefined;
  const fields = result.stdout.split('\n')[0]!.split(':');
  if (fields.length < 7) return undefined;
  return { name: fields[0]!, uid: Number(fields[2]), gid: Number(fields[3]), home: fields[5]! };
}

/** How an action ended: the same fields on success and failure. */
export interface ActionResult {
  command: string;
  user: string | undefined;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  failed: boolean;
}

/** Runs `action` with `/bin/sh -c`; `runas` switches uid, gid (and drops supplementary groups), HOME, USER, LOGNAME. */
export async function runAction(action: string, runas: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<ActionResult> {
  const started = performance.now();
  const done = (partial: Omit<ActionResult, 'command' | 'user' | 'durationMs'>): ActionResult => ({
    command: action,
    user: runas,
    durationMs: performance.now() - started,
    ...partial,
  });
  let identity: { uid: number; gid: number } | undefined;
  let childEnv: NodeJS.ProcessEnv = { ...env };
  if (runas !== undefined) {
    const user = lookupUser(runas);
    if (!user)
      return done({
        exitCode: null,
        signal: null,
        stdout: '',
        stderr: `no such user '${runas}' (getent passwd ${runas} found nothing)`,
        failed: true,
      });
    const self = process.getuid?.();
    if (self !== user.uid || process.getgid?.() !== user.gid) identity = { uid: user.uid, gid: user.gid };
    childEnv = { ...childEnv, HOME: user.home, USER: user.name, LOGNAME: user.name };
  }
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let child;
    try {
      child = spawn('/bin/sh', ['-c', action], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], cwd: '/', ...identity });
    } catch (error) {
      resolve(
        done({ exitCode: null, signal: null, stdout: '', stderr: `cannot run as ${runas}: ${(error as Error).message}`, failed: true }),
      );
      return;
    }
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', (error) =>
      resolve(done({ exitCode: null, signal: null, stdout, stderr: `${stderr}${error.message}`, failed: true })),
    );
    child.on('close', (exitCode, signal) => resolve(done({ exitCode, signal, stdout, stderr, failed: exitCode !== 0 })));
  });
}
