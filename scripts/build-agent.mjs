#!/usr/bin/env node
// `npm run build:agent`: every in-guest agent command and hook in one CommonJS file, dist/hearth-agent.cjs (runs on
// a guest's node >= 20), and the same file as a Node single executable, dist/hearth-agent (for guests without
// node). The bundle is CommonJS because a Node 20 single executable's main must be. Each command is reached by a
// dynamic import, which esbuild turns into a lazily initialised module, so only the chosen command's code runs
// (every bin.ts calls runMain when it is loaded). Native optional modules (@github/keytar) stay outside.
//
//   node scripts/build-agent.mjs [--out DIR] [--no-sea] [--no-minify]
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_COMMANDS } from './agent-commands.mjs';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const outDir = args.includes('--out') ? args[args.indexOf('--out') + 1] : join(root, 'dist');
const wantSea = !args.includes('--no-sea');
const minify = !args.includes('--no-minify');

/** The sentinel fuse every Node single executable carries (node's docs, `postject --sentinel-fuse`). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

function run(command, commandArgs, options = {}) {
  const result = spawnSync(command, commandArgs, { encoding: 'utf8', ...options });
  if (result.error) throw new Error(`${command}: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${command} ${commandArgs.join(' ')} exited ${result.status}: ${result.stderr}`);
  return result;
}

function version() {
  const { version: pkgVersion } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const commit = spawnSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  return commit.status === 0 ? `${pkgVersion} (${commit.stdout.trim()})` : pkgVersion;
}

const commands = Object.entries(AGENT_COMMANDS).filter(([, entry]) => existsSync(join(root, entry)));
const missing = Object.keys(AGENT_COMMANDS).filter((name) => !commands.some(([have]) => have === name));
const hooks = readdirSync(join(root, 'hooks'))
  .filter((group) => !group.startsWith('_') && existsSync(join(root, 'hooks', group, 'main.ts')))
  .sort();

const loader = (path) => `() => import(${JSON.stringify(join(root, path))})`;
const entry = `import { dispatch } from ${JSON.stringify(join(root, 'images/agent/dispatch.ts'))};
dispatch({
  version: ${JSON.stringify(version())},
  commands: { ${commands.map(([name, path]) => `${JSON.stringify(name)}: ${loader(path)}`).join(',\n    ')} },
  hooks: { ${hooks.map((group) => `${JSON.stringify(group)}: ${loader(`hooks/${group}/main.ts`)}`).join(',\n    ')} },
});
`;

mkdirSync(outDir, { recursive: true });
const bundle = join(outDir, 'hearth-agent.cjs');
await build({
  stdin: { contents: entry, resolveDir: root, sourcefile: 'hearth-agent-entry.ts', loader: 'ts' },
  outfile: bundle,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  minify,
  legalComments: 'none',
  external: ['@github/keytar'],
  // ESM sources (node-cron among them) read import.meta.url when loaded; in CommonJS it must be made up.
  define: { 'import.meta.url': '__hearthImportMetaUrl' },
  banner: { js: "#!/usr/bin/env node\nconst __hearthImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
});
chmodSync(bundle, 0o755);
const sizes = { 'hearth-agent.cjs': statSync(bundle).size };

if (wantSea) {
  const work = mkdtempSync(join(tmpdir(), 'hearth-sea-'));
  try {
    const blob = join(work, 'hearth-agent.blob');
    const seaConfig = join(work, 'sea-config.json');
    writeFileSync(seaConfig, JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true }));
    run(process.execPath, ['--experimental-sea-config', seaConfig]);
    const binary = join(work, 'hearth-agent');
    copyFileSync(process.execPath, binary);
    chmodSync(binary, 0o755);
    // Strip before injecting: the node binary's symbols are a tenth of its size and no use in a guest.
    const stripped = spawnSync('strip', ['--strip-all', binary], { encoding: 'utf8' });
    if (stripped.status !== 0) process.stderr.write(`build-agent: strip unavailable or failed, the executable keeps its symbols\n`);
    const postject = join(root, 'node_modules/postject/dist/cli.js');
    run(process.execPath, [postject, binary, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
    rmSync(join(outDir, 'hearth-agent'), { force: true });
    copyFileSync(binary, join(outDir, 'hearth-agent'));
    chmodSync(join(outDir, 'hearth-agent'), 0o755);
    sizes['hearth-agent'] = statSync(join(outDir, 'hearth-agent')).size;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
process.stdout.write(
  `built ${Object.entries(sizes)
    .map(([name, size]) => `${join(outDir, name)} (${mb(size)})`)
    .join(
      ', ',
    )}: ${commands.length} commands (${commands.map(([name]) => name).join(', ')}), ${hooks.length} hooks (${hooks.join(', ')})\n`,
);
if (missing.length > 0) process.stdout.write(`not in this tree yet, left out: ${missing.join(', ')}\n`);
