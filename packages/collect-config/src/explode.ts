// The deployment explosion (reference/agents.md §1.5): besides the collector's whole document,
// each deployment of group `os-apply-config` or `Heat::Ungrouped` becomes its own output
// `(deployment.name, deployment.config)`.

/** One output of a collector: the cache key and its JSON content. */
export type Output = readonly [key: string, content: unknown];

/** Where explodeDeployments reports what it skipped. */
export interface ExplodeLog {
  warn(message: string, fields?: Record<string, unknown>): void;
}

const EXPLODED_GROUPS = new Set(['os-apply-config', 'Heat::Ungrouped']);

/**
 * Whether a deployment name can be a cache key: the key becomes `<cachedir>/<name>.json`, so a
 * name with a `/` (or `.`, `..`, empty, a NUL) would write outside the cache directory or fail the
 * whole pass. Heat never produces such names (resource names may not contain `/`).
 */
function isSafeKey(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\0');
}

/** `[(collector, document), (dep.name, dep.config)…]` for every list under one of `deploymentKeys` at the document's root. */
export function explodeDeployments(
  document: Record<string, unknown>,
  deploymentKeys: readonly string[],
  collector: string,
  log: ExplodeLog,
): Output[] {
  const outputs: Output[] = [[collector, document]];
  for (const key of deploymentKeys) {
    if (!Object.hasOwn(document, key)) continue;
    const deployments = document[key];
    if (!Array.isArray(deployments)) {
      log.warn(`Deployment-key ${key} was found but does not contain a list.`, { collector });
      continue;
    }
    for (const deployment of deployments as unknown[]) {
      const item = (deployment ?? {}) as Record<string, unknown>;
      if (typeof item !== 'object' || !Object.hasOwn(item, 'name')) {
        log.warn(`No name found for a deployment under ${key}.`, { collector });
        continue;
      }
      const group = Object.hasOwn(item, 'group') ? item.group : 'Heat::Ungrouped';
      if (typeof group !== 'string' || !EXPLODED_GROUPS.has(group)) continue;
      const name = String(item.name);
      if (!isSafeKey(name)) {
        log.warn(`Deployment name ${JSON.stringify(name)} under ${key} is not a plain file name; skipped.`, { collector });
        continue;
      }
      outputs.push([name, item.config ?? null]);
    }
  }
  return outputs;
}
