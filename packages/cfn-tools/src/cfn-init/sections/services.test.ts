import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StepError } from '../context.ts';
import { fakeContext, recordingRunner } from '../testing.ts';
import { applyServices, serviceCommand } from './services.ts';

const stopped = (names: string[]) => (command: string) =>
  command.includes('is-active') && names.some((name) => command.endsWith(` ${name}.service`)) ? { exitCode: 3 } : undefined;

test('systemd: enable + start a stopped service; disable + stop a running one', async () => {
  const runner = recordingRunner(stopped(['nginx']));
  const { context } = fakeContext(runner, { tools: ['systemctl'] });
  await applyServices(context, {
    systemd: { nginx: { enabled: 'true', ensureRunning: true }, telnet: { enabled: false, ensureRunning: 'false' } },
  });
  assert.deepEqual(
    runner.calls.map((call) => call.command),
    [
      'systemctl enable nginx.service',
      'systemctl is-active --quiet nginx.service',
      'systemctl start nginx.service',
      'systemctl disable telnet.service',
      'systemctl is-active --quiet telnet.service',
      'systemctl stop telnet.service',
    ],
  );
});

test('a running service is restarted only when a file, source, package or command it lists changed', async () => {
  const runner = recordingRunner();
  const { context, lines } = fakeContext(runner, { tools: ['systemctl'] });
  context.changes.files.add('/etc/nginx/nginx.conf');
  context.changes.packages.add('apt:php');
  context.changes.commands.add('10_migrate');
  await applyServices(context, {
    sysvinit: {
      byfile: { ensureRunning: true, files: ['/etc/nginx/nginx.conf', '/etc/other'] },
      bypackage: { ensureRunning: true, packages: { apt: ['php'] } },
      bycommand: { ensureRunning: true, commands: ['10_migrate'] },
      bysource: { ensureRunning: true, sources: ['/srv/app'] },
      otherpkg: { ensureRunning: true, packages: { yum: ['php'] } },
    },
  });
  const restarts = runner.calls.map((call) => call.command).filter((command) => command.includes('restart'));
  assert.deepEqual(restarts, [
    'systemctl restart byfile.service',
    'systemctl restart bypackage.service',
    'systemctl restart bycommand.service',
  ]);
  assert.deepEqual(lines.find((line) => line.service === 'byfile' && line.changed)?.changed, ['/etc/nginx/nginx.conf']);
});

test('without systemctl: service + update-rc.d, or chkconfig where there is one', async () => {
  const runner = recordingRunner((command) => (command === 'service ntp status' ? { exitCode: 3 } : undefined));
  await applyServices(fakeContext(runner).context, { sysvinit: { ntp: { enabled: true, ensureRunning: true } } });
  assert.deepEqual(
    runner.calls.map((call) => call.command),
    ['update-rc.d ntp enable', 'service ntp status', 'service ntp start'],
  );
  assert.deepEqual(
    serviceCommand((name) => name === 'chkconfig', 'ntp', 'disable'),
    ['chkconfig', 'ntp', 'off'],
  );
});

test('a failing start names the service and the exit code; unknown managers are refused', async () => {
  const runner = recordingRunner((command) =>
    command.includes('is-active')
      ? { exitCode: 3 }
      : command.includes('start')
        ? { exitCode: 5, stderr: 'Unit nosuch.service not found.' }
        : undefined,
  );
  const { context } = fakeContext(runner, { tools: ['systemctl'] });
  await assert.rejects(applyServices(context, { systemd: { nosuch: { ensureRunning: true } } }), (error: Error) => {
    assert.ok(error instanceof StepError);
    assert.equal(error.message, 'services: nosuch: systemctl start nosuch.service failed: Unit nosuch.service not found. (exit code 5)');
    return true;
  });
  await assert.rejects(applyServices(context, { windows: { w3svc: {} } }), /services: windows: unknown service manager/);
  await assert.rejects(
    applyServices(context, { systemd: { a: { ensureRunning: true, files: '/etc/x' } } }),
    /services: a: files must be a list/,
  );
});
