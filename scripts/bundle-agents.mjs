#!/usr/bin/env node
// Bundles each in-guest agent command into one self-contained ESM file under dist/agents/ (or the
// directory given as the first argument), so a VM runs it with plain `node` and no node_modules:
// no tsx, no module resolution at start-up. The images issue builds on this; the benchmarks run
// the agents from these bundles. Native optional modules (@github/keytar) stay external.
import { build } from 'esbuild';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const outDir = process.argv[2] ?? join(root, 'dist', 'agents');

/** Command name -> entry point, for every agent command that exists in this tree. */
const COMMANDS = {
  'os-collect-config': 'packages/collect-config/src/bin.ts',
  'os-refresh-config': 'packages/refresh-config/src/bin.ts',
  'dib-run-parts': 'packages/refresh-config/src/dib-run-parts-bin.ts',
  'os-apply-config': 'packages/apply-config/src/bin.ts',
  'heat-config': 'packages/heat-config/src/bin.ts',
  'heat-config-notify': 'packages/config-notify/src/bin.ts',
  'cfn-init': 'packages/cfn-tools/src/cfn-init/bin.ts',
  'cfn-signal': 'packages/cfn-tools/src/cfn-signal/bin.ts',
  'cfn-hup': 'packages/cfn-tools/src/cfn-hup/bin.ts',
  'cfn-get-metadata': 'packages/cfn-tools/src/cfn-get-metadata/bin.ts',
  'cfn-push-stats': 'packages/cfn-tools/src/cfn-push-stats/bin.ts',
};

mkdirSync(outDir, { recursive: true });
const built = [];
for (const [name, entry] of Object.entries(COMMANDS)) {
  if (!existsSync(join(root, entry))) continue;
  await build({
    entryPoints: [join(root, entry)],
    outfile: join(outDir, `${name}.mjs`),
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
  });
  built.push(name);
}
process.stdout.write(`bundled ${built.length} agent commands into ${outDir}: ${built.join(', ')}\n`);
