// Which hook events a metadata change gives: the value at a hook's path before and after.
import { jsonEqual } from '../shared/metadata-cache.ts';
import type { HookConfig, HookTrigger } from './config.ts';

/** The value at `keys` below the resource's metadata, or undefined when a key is absent. */
export function valueAtPath(metadata: unknown, keys: readonly string[]): unknown {
  let value = metadata;
  for (const key of keys) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/**
 * post.add (absent -> present), post.update (present, changed), post.remove (present -> absent), or none. With no
 * cached metadata at all (`before` undefined: neither cfn-init nor cfn-hup ran here yet), a present value is
 * post.update, as in the original: it compares with nothing, sees a change and fires post.update on that first pass.
 */
export function changeEvent(before: unknown, after: unknown, hook: Pick<HookConfig, 'keys'>): HookTrigger | undefined {
  const now = valueAtPath(after, hook.keys);
  if (before === undefined) return now === undefined ? undefined : 'post.update';
  const old = valueAtPath(before, hook.keys);
  if (old === undefined && now === undefined) return undefined;
  if (old === undefined) return 'post.add';
  if (now === undefined) return 'post.remove';
  return jsonEqual(old, now) ? undefined : 'post.update';
}
