// Where a deployment group's hook lives: the group name sanitised to a file name, looked up in
// HEAT_CONFIG_HOOKS, /usr/libexec/heat-config/hooks, /var/lib/heat-config/hooks (first hit wins).
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** Groups that never had a hook script: no hook is expected, so a missing one is not an error. */
export const GROUPS_WITHOUT_HOOK: readonly string[] = Object.freeze(['os-apply-config']);

/**
 * The hook file name for a group: every character except letters, digits, `-` and `_` removed
 * (`Heat::Ungrouped` -> `HeatUngrouped`), as 55-heat-config does with Python's `isalnum`.
 */
export function hookName(group: string): string {
  return Array.from(group)
    .filter((char) => char === '-' || char === '_' || /^[\p{L}\p{N}]$/u.test(char))
    .join('');
}

/** The first `<dir>/<hookName(group)>` that exists, in `dirs` order (empty entries skipped); undefined when none. */
export function findHook(group: string, dirs: readonly string[]): string | undefined {
  const name = hookName(group);
  if (name === '') return undefined;
  for (const dir of dirs) {
    if (dir === '' || !existsSync(dir)) continue;
    const path = join(dir, name);
    if (existsSync(path)) return path;
  }
  return undefined;
}
