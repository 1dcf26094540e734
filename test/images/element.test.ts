// The diskimage-builder element's shape (diskimage-builder itself cannot run here): hook scripts are executable
// files with a #! line in the phase directories DIB runs, element-deps names real elements, static files have
// the modes they get in the image, and the copies of the packages' files have not drifted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;
const ELEMENT = join(ROOT, 'images/elements/hearth-agent');
const STATIC = join(ELEMENT, 'static');

/** The phase directories diskimage-builder runs hooks from (the ones this element uses among them). */
const PHASES = ['extra-data.d', 'install.d', 'post-install.d', 'pre-install.d', 'root.d', 'block-device.d', 'finalise.d', 'cleanup.d'];

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}
const mode = (path: string) => statSync(path).mode & 0o777;

test('the element has exactly the parts diskimage-builder reads, and its hooks are executable scripts', () => {
  assert.deepEqual(readdirSync(ELEMENT).sort(), [
    'README.rst',
    'element-deps',
    'element-provides',
    'environment.d',
    'extra-data.d',
    'install.d',
    'post-install.d',
    'static',
  ]);
  const hooks = PHASES.flatMap((phase) => {
    try {
      return readdirSync(join(ELEMENT, phase)).map((name) => join(phase, name));
    } catch {
      return [];
    }
  });
  assert.deepEqual(hooks.sort(), ['extra-data.d/10-hearth-agent', 'install.d/50-hearth-agent', 'post-install.d/50-hearth-agent-units']);
  for (const hook of hooks) {
    const path = join(ELEMENT, hook);
    assert.equal(mode(path), 0o755, `${hook} must be 0755`);
    // DIB runs parts whose names are [A-Za-z0-9_-]+ only (dib-run-parts); a dot would make it skip the file.
    assert.match(hook.split('/')[1]!, /^[0-9]{2}-[A-Za-z0-9_-]+$/, `${hook}: dib-run-parts name`);
    const text = readFileSync(path, 'utf8');
    assert.match(text, /^#!\/bin\/bash\n/, `${hook} starts with #!/bin/bash`);
    assert.match(text, /^set -eu$/m, `${hook} stops on errors`);
    assert.match(text, /DIB_DEBUG_TRACE/, `${hook} honours DIB_DEBUG_TRACE`);
    const syntax = spawnSync('bash', ['-n', path], { encoding: 'utf8' });
    assert.equal(syntax.status, 0, `${hook}: ${syntax.stderr}`);
  }
  for (const file of ['element-deps', 'element-provides', 'README.rst', 'environment.d/10-hearth-agent.bash']) {
    assert.equal(mode(join(ELEMENT, file)), 0o644, `${file} must be 0644 (sourced or read, never run)`);
  }
  assert.equal(spawnSync('bash', ['-n', join(ELEMENT, 'environment.d/10-hearth-agent.bash')]).status, 0);
});

test('element-deps names the elements whose phases it relies on; element-provides what it replaces', () => {
  const lines = (file: string) => readFileSync(join(ELEMENT, file), 'utf8').trim().split('\n');
  const deps = lines('element-deps');
  // install-static copies static/ into the image; dib-init-system makes systemctl enable meaningful.
  assert.deepEqual(deps, ['dib-init-system', 'install-static']);
  const provides = lines('element-provides');
  for (const replaced of ['os-collect-config', 'os-refresh-config', 'os-apply-config', 'heat-config'])
    assert.ok(provides.includes(replaced), replaced);
  assert.equal(new Set([...deps, ...provides]).size, deps.length + provides.length, 'an element cannot depend on what it provides');
});

test('static files land with image modes: configure.d scripts 0755, templates and their .oac 0644, nothing else', () => {
  const files = walk(STATIC).map((path) => [relative(STATIC, path), mode(path)] as const);
  assert.deepEqual(Object.fromEntries(files), {
    'usr/libexec/os-apply-config/templates/etc/os-collect-config.conf': 0o644,
    'usr/libexec/os-apply-config/templates/etc/os-collect-config.conf.oac': 0o644,
    'usr/libexec/os-apply-config/templates/var/run/heat-config/heat-config': 0o644,
    'usr/libexec/os-apply-config/templates/var/run/heat-config/heat-config.oac': 0o644,
    'usr/libexec/os-refresh-config/configure.d/20-os-apply-config': 0o755,
    'usr/libexec/os-refresh-config/configure.d/55-heat-config': 0o755,
  });
  for (const script of ['20-os-apply-config', '55-heat-config']) {
    assert.match(readFileSync(join(STATIC, 'usr/libexec/os-refresh-config/configure.d', script), 'utf8'), /^#!\/bin\/sh\n/);
  }
});

test("the 55-heat-config copy has not drifted from the package; the templates render hearth's collector too", () => {
  const element = (path: string) => readFileSync(join(STATIC, path), 'utf8');
  const pkg = (path: string) => readFileSync(join(ROOT, 'packages', path), 'utf8');
  assert.equal(
    element('usr/libexec/os-refresh-config/configure.d/55-heat-config'),
    pkg('heat-config/os-refresh-config/configure.d/55-heat-config'),
  );
  // The templates live only here (the e2e agent loop renders these same files), credential included.
  const conf = element('usr/libexec/os-apply-config/templates/etc/os-collect-config.conf');
  assert.match(conf, /^\[hearth\]\nmetadata_url = \{\{metadata_url\}\}$/m);
  assert.match(conf, /^access_key_id = \{\{access_key_id\}\}$/m);
});

test('the systemd units start after network-online.target and cloud-init, restart on failure and log to the journal', () => {
  for (const unit of ['os-collect-config.service', 'heat-config-notify.service', 'cfn-hup.service']) {
    const text = readFileSync(join(ROOT, 'images/systemd', unit), 'utf8');
    assert.match(text, /^After=network-online\.target cloud-init\.service$/m, unit);
    assert.match(text, /^Wants=network-online\.target$/m, unit);
    assert.match(text, /^Restart=on-failure$/m, unit);
    assert.match(text, /^StandardError=journal$/m, unit);
    assert.match(text, /^LimitCORE=0$/m, `${unit}: no core dumps of a process holding credentials`);
    assert.match(text, /^ExecStart=\/usr\/bin\/[a-z-]+/m, unit);
    assert.match(text, /^WantedBy=multi-user\.target$/m, unit);
  }
});

test('a sandboxed unit can start where its writable dirs do not exist yet, and systemd-analyze accepts every unit', () => {
  for (const unit of ['os-collect-config.service', 'heat-config-notify.service', 'cfn-hup.service']) {
    const path = join(ROOT, 'images/systemd', unit);
    const text = readFileSync(path, 'utf8');
    // Under ProtectSystem=strict a ReadWritePaths= dir that is missing fails every start (226/NAMESPACE); a stock
    // image given the agent by cloud-init has no /var/lib/hearth until the collector's first pass.
    for (const [, paths] of text.matchAll(/^ReadWritePaths=(.*)$/gm)) {
      for (const entry of paths!.split(/\s+/)) assert.match(entry, /^-/, `${unit}: ReadWritePaths=${entry} must be optional ("-")`);
    }
    if (/^ProtectSystem=strict$/m.test(text)) {
      assert.match(text, /^StateDirectory=hearth$/m, `${unit}: systemd makes the outbox's dir writable (and creates it)`);
      assert.match(text, /^StateDirectoryMode=0700$/m, `${unit}: the outbox holds signal URLs and credentials`);
    }
    const analyze = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8' });
    if (analyze.error) continue; // no systemd-analyze here
    // Only complaints about this unit's own settings count; the agent itself is not installed on this machine.
    const complaints = analyze.stderr.split('\n').filter((line) => line.trim() !== '' && !/is not executable/.test(line));
    assert.deepEqual(complaints, [], `${unit}: systemd-analyze verify`);
  }
});
