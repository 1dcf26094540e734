// `component` groups (Heat's SoftwareComponent): the config holds one entry per tool and action.

/** What to run for a component: the chosen entry's config and tool, or why none applies. */
export type ComponentChoice = { config: unknown; group: string } | { skip: string };

/**
 * Picks the first `config.configs[]` entry whose `actions` contains `action` (the `deploy_action`
 * input), as 55-heat-config does; `skip` says why nothing applies.
 */
export function chooseComponent(config: unknown, action: unknown): ComponentChoice {
  const configs = typeof config === 'object' && config !== null ? (config as { configs?: unknown }).configs : undefined;
  if (Array.isArray(configs)) {
    for (const entry of configs as unknown[]) {
      if (typeof entry !== 'object' || entry === null) continue;
      const { actions, config: entryConfig, tool } = entry as { actions?: unknown; config?: unknown; tool?: unknown };
      if (Array.isArray(actions) && actions.includes(action) && typeof tool === 'string') return { config: entryConfig, group: tool };
    }
  }
  return { skip: `Skipping group component, no valid script is defined for deploy action ${String(action)}` };
}
