#!/usr/bin/env node
// Renders cloud-init user-data that installs and starts hearth's agent on a stock cloud image, from the JSON
// `hearth server create --json` prints (its os_collect_config_conf holds the server's credential).
//
//   hearth server create web-1 --json | node images/cloud-init/render-user-data.mjs \
//       --agent-url https://example.test/hearth-agent --agent-sha256 <hex> > user-data
//   node images/cloud-init/render-user-data.mjs --preinstalled < server.json > user-data   (agent already in the image)
//
// Exit 2 with a message on bad flags or input. Prints the user-data on stdout.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';

const here = new URL('.', import.meta.url).pathname;
const USAGE = `usage: render-user-data.mjs [SERVER_JSON] (--agent-url URL --agent-sha256 HEX | --preinstalled)
  SERVER_JSON      the output of \`hearth server create --json\` (default: stdin)
  --agent-url      where the VM downloads the hearth-agent single executable at first boot
  --agent-sha256   its SHA-256 (hex); the download is refused when it differs
  --preinstalled   the image already has /usr/bin/hearth-agent (baked); download nothing
`;

function fail(message) {
  process.stderr.write(`render-user-data: ${message}\n${USAGE}`);
  process.exit(2);
}

/**
 * A YAML block scalar for `text`, the value of a key indented `parentIndent` spaces (its lines go two deeper); falls
 * back to a JSON (YAML double-quoted) string for text a block scalar cannot hold (control characters).
 */
export function yamlBlock(text, parentIndent) {
  // eslint-disable-next-line no-control-regex -- control characters cannot go into a block scalar
  if (text === '' || /[\u0000-\u0008\u000b-\u001f\u007f\u0085\u2028\u2029\ufeff]/.test(text)) return JSON.stringify(text);
  const trailing = /\n*$/.exec(text)[0].length;
  const chomp = trailing === 0 ? '-' : trailing === 1 ? '' : '+';
  const body = text.slice(0, text.length - trailing).split('\n');
  const pad = ' '.repeat(parentIndent + 2);
  const lines = body.map((line) => (line === '' ? '' : pad + line));
  return `|2${chomp}\n${lines.join('\n')}${'\n'.repeat(Math.max(trailing - 1, 0))}`;
}

/** Double-quoted YAML scalar (JSON's escapes are a subset of YAML's). */
const quoted = (value) => JSON.stringify(value);

/** Every file under `dir`, sorted, as paths relative to it. */
function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? filesUnder(join(dir, entry.name)).map((name) => join(entry.name, name)) : [entry.name]))
    .sort();
}

/**
 * write_files entries (the first without its `- `, which the template's marker line holds) for the hearth-agent
 * element's static tree: os-refresh-config's configure.d scripts and os-apply-config's templates. Without them a stock
 * image's os-refresh-config has no phase to run, and no deployment ever reaches heat-config.
 */
export function staticFileEntries(staticDir = join(here, '..', 'elements', 'hearth-agent', 'static')) {
  return filesUnder(staticDir)
    .map((name) => {
      const path = join(staticDir, name);
      const permissions = statSync(path).mode & 0o111 ? '0755' : '0644';
      const content = readFileSync(path, 'utf8');
      return [
        `path: ${quoted(`/${relative(staticDir, path)}`)}`,
        '    owner: root:root',
        `    permissions: '${permissions}'`,
        `    content: ${yamlBlock(content, 4)}`,
      ].join('\n');
    })
    .join('\n  - ');
}

/** The user-data text for a created server and how the agent gets onto the VM. */
export function renderUserData(created, options, template = readFileSync(join(here, 'user-data.yaml'), 'utf8')) {
  const conf = created?.os_collect_config_conf;
  if (typeof conf !== 'string' || conf.trim() === '')
    throw new Error('the JSON has no os_collect_config_conf: is it `hearth server create --json` output?');
  const unit = (name) => readFileSync(join(here, '..', 'systemd', name), 'utf8');
  let install;
  if (options.preinstalled) {
    install = `[sh, -c, ${quoted('test -x /usr/bin/hearth-agent || { echo "hearth: /usr/bin/hearth-agent missing (image not baked?)" >&2; exit 1; }')}]`;
  } else {
    if (!/^https?:\/\/\S+$/.test(options.agentUrl ?? ''))
      throw new Error(`--agent-url must be an http(s) URL, got ${JSON.stringify(options.agentUrl ?? '')}`);
    if (!/^[0-9a-f]{64}$/i.test(options.agentSha256 ?? ''))
      throw new Error(`--agent-sha256 must be 64 hex digits, got ${JSON.stringify(options.agentSha256 ?? '')}`);
    // The partial or refused download never stays behind in /usr/bin (the EXIT trap; a signal exits through it too).
    // Messages name the URL without its query: a signed download URL carries its signature there.
    const script = [
      'set -eu',
      'bin=/usr/bin',
      'url=${1%%\\?*}',
      'tmp=$(mktemp "$bin/.hearth-agent.XXXXXX")',
      `trap 'rm -f "$tmp"' EXIT`,
      `trap 'exit 1' HUP INT TERM`,
      'if ! { curl -fsSL --retry 10 --retry-connrefused -o "$tmp" "$1" || wget -q -O "$tmp" "$1"; }; then',
      '  echo "hearth: cannot download hearth-agent from $url: check that this VM reaches it (and has curl or wget); nothing was installed" >&2',
      '  exit 1',
      'fi',
      'got=$(sha256sum "$tmp" | cut -d" " -f1)',
      'if [ "$got" != "$2" ]; then',
      '  echo "hearth: hearth-agent from $url has SHA-256 $got, not $2; nothing was installed. The file there is not the build this user-data was rendered for: put that build there, or render the user-data again with --agent-sha256 of the file at the URL" >&2',
      '  exit 1',
      'fi',
      'chmod 0755 "$tmp"',
      'mv "$tmp" "$bin/hearth-agent"',
    ].join('\n');
    install = `[sh, -c, ${quoted(script)}, hearth-agent-download, ${quoted(options.agentUrl)}, ${quoted(options.agentSha256.toLowerCase())}]`;
  }
  const values = {
    OS_COLLECT_CONFIG_CONF: yamlBlock(conf.endsWith('\n') ? conf : `${conf}\n`, 4),
    UNIT_OS_COLLECT_CONFIG: yamlBlock(unit('os-collect-config.service'), 4),
    UNIT_HEAT_CONFIG_NOTIFY: yamlBlock(unit('heat-config-notify.service'), 4),
    UNIT_CFN_HUP: yamlBlock(unit('cfn-hup.service'), 4),
    ELEMENT_STATIC_FILES: staticFileEntries(),
    INSTALL_AGENT: install,
  };
  return template.replace(/'@([A-Z_]+)@'/g, (marker, name) => {
    if (!(name in values)) throw new Error(`template marker ${marker} has no value`);
    return values[name];
  });
}

if (process.argv[1] && new URL(`file://${process.argv[1]}`).pathname === new URL(import.meta.url).pathname) {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        'agent-url': { type: 'string' },
        'agent-sha256': { type: 'string' },
        preinstalled: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    fail(error.message);
  }
  if (parsed.values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  if (parsed.positionals.length > 1) fail('at most one SERVER_JSON file');
  if (parsed.values.preinstalled && parsed.values['agent-url']) fail('--preinstalled and --agent-url exclude each other');
  let created;
  try {
    created = JSON.parse(readFileSync(parsed.positionals[0] ?? 0, 'utf8'));
  } catch (error) {
    fail(`cannot read the server JSON: ${error.message}`);
  }
  try {
    process.stdout.write(
      renderUserData(created, {
        preinstalled: parsed.values.preinstalled === true,
        agentUrl: parsed.values['agent-url'],
        agentSha256: parsed.values['agent-sha256'],
      }),
    );
  } catch (error) {
    fail(error.message);
  }
}
