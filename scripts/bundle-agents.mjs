#!/usr/bin/env node
// Bundles each in-guest agent command into one self-contained ESM file under dist/agents/ (or the
// directory given as the first argument), so a VM runs it with plain `node` and no node_modules:
// no tsx, no module resolution at start-up. The images issue builds on this; the benchmarks run
// the agents from these bundles. Native optional modules (@github/keytar) stay external.
import { build } from 'esbuild';
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_COMMANDS } from './agent-commands.mjs';

const root = new URL('..', import.meta.url).pathname;
const outDir = process.argv[2] ?? join(root, 'dist', 'agents');

/** esbuild options shared by every bundle. */
function bundleOptions(entry, outfile) {
  return {
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: ['@github/keytar'],
    // Some bundled CommonJS dependencies call require(); give the ESM bundle one.
    banner: {
      js: "#!/usr/bin/env node\nimport { createRequire as __hearthRequire } from 'node:module'; const require = __hearthRequire(import.meta.url);",
    },
    logLevel: 'warning',
  };
}

mkdirSync(outDir, { recursive: true });
const built = [];
for (const [name, entry] of Object.entries(AGENT_COMMANDS)) {
  if (!existsSync(join(root, entry))) continue;
  await build(bundleOptions(join(root, entry), join(outDir, `${name}.mjs`)));
  built.push(name);
}

// Hooks: heat-config runs `<hooks dir>/<group>` with no extension, which node would load as
// CommonJS; so each hook is `<group>.mjs` plus a two-line `<group>` launcher beside it.
const hooksDir = join(outDir, 'hooks');
const hooks = [];
for (const group of existsSync(join(root, 'hooks')) ? readdirSync(join(root, 'hooks')) : []) {
  const entry = join(root, 'hooks', group, 'main.ts');
  if (group.startsWith('_') || !existsSync(entry)) continue;
  mkdirSync(hooksDir, { recursive: true });
  await build(bundleOptions(entry, join(hooksDir, `${group}.mjs`)));
  writeFileSync(join(hooksDir, group), `#!/bin/sh\nexec node "$(dirname "$0")/${group}.mjs" "$@"\n`);
  chmodSync(join(hooksDir, group), 0o755);
  hooks.push(group);
}
process.stdout.write(
  `bundled ${built.length} agent commands (${built.join(', ')}) and ${hooks.length} hooks (${hooks.join(', ')}) into ${outDir}\n`,
);
