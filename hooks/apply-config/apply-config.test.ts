import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeTool, runHookExecutable, sampleDeployment } from '../_lib/testing.ts';

const HOOK = new URL('./apply-config', import.meta.url).pathname;
const OURS = new URL('../../packages/apply-config/bin/os-apply-config.js', import.meta.url).pathname;
const DEBIAN = '/usr/bin/os-apply-config';

test('runs HEAT_APPLY_CONFIG_CMD with no arguments and the inherited env; its output and exit code are the result', async () => {
  const tool = fakeTool('os-apply-config', { stdout: 'rendered\n', stderr: 'warn\n', exitCode: 1 });
  const run = await runHookExecutable(HOOK, sampleDeployment({ group: 'apply-config', config: { ignored: true } }), {
    env: { HEAT_APPLY_CONFIG_CMD: tool.path, OS_CONFIG_FILES: '/x/a.json:/x/b.json', OS_APPLY_CONFIG: '/nonexistent' },
  });
  assert.equal(run.exitCode, 0);
  assert.deepEqual(run.result, { deploy_stdout: 'rendered\n', deploy_stderr: 'warn\n', deploy_status_code: 1 });
  const [call, ...more] = tool.calls();
  assert.equal(more.length, 0);
  assert.deepEqual(call?.argv, []);
  assert.equal(call?.env.OS_CONFIG_FILES, '/x/a.json:/x/b.json');
  assert.equal(call?.stdin, '');
});

test('OS_APPLY_CONFIG names the command when HEAT_APPLY_CONFIG_CMD is unset; a missing command is status 1 with the reason', async () => {
  const tool = fakeTool('oac');
  const run = await runHookExecutable(HOOK, sampleDeployment(), { env: { OS_APPLY_CONFIG: tool.path } });
  assert.deepEqual(run.result, { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 });
  assert.equal(tool.calls().length, 1);
  const missing = await runHookExecutable(HOOK, sampleDeployment(), { env: { HEAT_APPLY_CONFIG_CMD: '/nonexistent/os-apply-config' } });
  assert.equal(missing.exitCode, 0);
  assert.equal(missing.result?.deploy_status_code, 1);
  assert.match(String(missing.result?.deploy_stderr), /could not start/);
});

/** A template tree that renders `<out>/app.conf` from the `app.port` key, and the metadata file for it. */
function renderSetup(): { env: Record<string, string>; target: string } {
  const dir = mkdtempSync(join(tmpdir(), 'hook-oac-'));
  const out = join(dir, 'out');
  const templates = join(dir, 'templates');
  mkdirSync(join(templates, out), { recursive: true });
  writeFileSync(join(templates, out, 'app.conf'), 'port={{app.port}}\n');
  writeFileSync(join(dir, 'meta.json'), JSON.stringify({ app: { port: 8080 } }));
  return { env: { OS_CONFIG_APPLIER_TEMPLATES: templates, OS_CONFIG_FILES: join(dir, 'meta.json') }, target: join(out, 'app.conf') };
}

for (const [label, command] of [
  ['hearth os-apply-config', OURS],
  ["Debian's os-apply-config", DEBIAN],
] as const) {
  test(
    `with the real ${label}: renders from all collected metadata, and reports its failure`,
    { skip: !existsSync(command) && `${command} not installed` },
    async () => {
      const setup = renderSetup();
      const run = await runHookExecutable(HOOK, sampleDeployment({ group: 'apply-config' }), {
        env: { ...setup.env, HEAT_APPLY_CONFIG_CMD: command },
      });
      assert.equal(run.result?.deploy_status_code, 0, String(run.result?.deploy_stderr));
      assert.equal(readFileSync(setup.target, 'utf8'), 'port=8080\n');
      writeFileSync(setup.env.OS_CONFIG_FILES!, '{not json');
      const failed = await runHookExecutable(HOOK, sampleDeployment({ group: 'apply-config' }), {
        env: { ...setup.env, HEAT_APPLY_CONFIG_CMD: command },
      });
      assert.equal(failed.exitCode, 0);
      assert.equal(failed.result?.deploy_status_code, 1);
      assert.notEqual(failed.result?.deploy_stderr, '');
    },
  );
}
