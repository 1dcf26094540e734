import { mkdirSync } from 'node:fs';

export { hookDirs, hookEnvPrefix, hookPath, type HookDirs } from '@hearth/agent-kit/hook-dirs';

/** Creates `path` and missing parents with mode 0700 (an existing dir keeps its mode). */
export function ensureDir(path: string): string {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  return path;
}

/** The command a hook runs: `envVar` when set and non-empty (e.g. HEAT_ANSIBLE_CMD), else `fallback`. */
export function toolCommand(envVar: string, fallback: string, env: NodeJS.ProcessEnv = process.env): string {
  const value = env[envVar];
  return value !== undefined && value !== '' ? value : fallback;
}
