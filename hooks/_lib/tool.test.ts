import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Polls until `path` exists (bounded), then returns its text. */
async function waitForFile(path: string, ms = 15_000): Promise<string> {
  const until = Date.now() + ms;
  while (!existsSync(path)) {
    if (Date.now() > until) assert.fail(`${path} did not appear within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return readFileSync(path, 'utf8');
}

test('a stop signal while a tool runs: the tool stops by itself and is reported; no further tool is started', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hook-tool-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A hook in its own process: the signal goes to it, as systemd or heat-config sends it.
  const script = `
    import { runTool } from ${JSON.stringify(new URL('./tool.ts', import.meta.url).pathname)};
    const first = await runTool('sh', ['-c', 'trap "echo trapped; exit 5" TERM; echo $$ > ${dir}/pid; while :; do sleep 0.05; done']);
    const second = await runTool('sh', ['-c', 'echo ran > ${dir}/second']);
    process.stdout.write(JSON.stringify({ first, second }));
  `;
  const hook = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  const killer = setTimeout(() => hook.kill('SIGKILL'), 20_000);
  let stdout = '';
  let stderr = '';
  hook.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  hook.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const closed = new Promise<number | null>((resolve) => hook.on('close', resolve));
  const toolPid = Number(await waitForFile(join(dir, 'pid')));
  process.kill(hook.pid!, 'SIGTERM');
  process.kill(toolPid, 'SIGTERM');
  const code = await closed;
  clearTimeout(killer);
  assert.equal(code, 0, stderr);
  const { first, second } = JSON.parse(stdout) as Record<string, { exitCode: number | null; stdout: string; stderr: string }>;
  assert.equal(first?.exitCode, 5);
  assert.equal(first?.stdout, 'trapped\n');
  assert.equal(second?.exitCode, null);
  assert.equal(second?.stderr, `sh -c 'echo ran > ${dir}/second': not started: the hook received SIGTERM\n`);
  assert.equal(existsSync(join(dir, 'second')), false);
});
