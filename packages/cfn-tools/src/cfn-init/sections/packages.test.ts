import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StepError } from '../context.ts';
import { fakeContext, recordingRunner } from '../testing.ts';
import { applyPackages } from './packages.ts';

const installs = (calls: Array<{ command: string }>) =>
  calls.map((call) => call.command).filter((command) => !/^(dpkg-query|rpm -q|gem list|python3 -m pip show)/.test(command));

test('apt: missing packages installed in one apt-get call, versions pinned with =, noninteractive', async () => {
  const runner = recordingRunner((command) => {
    if (command.endsWith(' curl')) return { exitCode: 0, stdout: 'install ok installed 7.88.1-10' };
    if (command.endsWith(' nginx')) return { exitCode: 0, stdout: 'install ok installed 1.22.0' };
    if (command.startsWith('dpkg-query')) return { exitCode: 1, stderr: 'no packages found' };
    return undefined;
  });
  const { context } = fakeContext(runner);
  await applyPackages(context, { apt: { curl: [], nginx: ['1.22.1-9'], jq: '1.6-2.1', git: '' } });
  assert.deepEqual(installs(runner.calls), ['apt-get install -y nginx=1.22.1-9 jq=1.6-2.1 git']);
  assert.deepEqual(runner.calls.find((call) => call.command.startsWith('apt-get'))?.options, {
    env: { DEBIAN_FRONTEND: 'noninteractive' },
  });
  assert.deepEqual([...context.changes.packages], ['apt:nginx', 'apt:jq', 'apt:git']);
});

test('apt: nothing installed when everything is there at the asked version', async () => {
  const runner = recordingRunner(() => ({ exitCode: 0, stdout: 'install ok installed 2.0' }));
  const { context } = fakeContext(runner);
  await applyPackages(context, { apt: { a: '2.0', b: [] } });
  assert.deepEqual(installs(runner.calls), []);
  assert.equal(context.changes.packages.size, 0);
});

test('yum falls back to dnf when there is no yum; rpm -q decides; versions joined with -', async () => {
  const runner = recordingRunner((command) =>
    command === 'rpm -q httpd' ? { exitCode: 0 } : command.startsWith('rpm -q') ? { exitCode: 1 } : undefined,
  );
  const { context } = fakeContext(runner, { tools: ['dnf'] });
  await applyPackages(context, { yum: { httpd: [], mod_ssl: '2.4.6' } });
  assert.deepEqual(installs(runner.calls), ['dnf -y install mod_ssl-2.4.6']);
  const withYum = recordingRunner(() => ({ exitCode: 1 }));
  await applyPackages(fakeContext(withYum, { tools: ['yum'] }).context, { yum: { httpd: [] } }).catch(() => undefined);
  assert.ok(withYum.calls.some((call) => call.command === 'yum -y install httpd'));
});

test('managers run in a fixed order: rpm, apt, yum, dnf, python, rubygems', async () => {
  const runner = recordingRunner((command) =>
    /^(dpkg-query|rpm -q|gem list|python3 -m pip show)/.test(command) ? { exitCode: 1 } : undefined,
  );
  const { context } = fakeContext(runner, { tools: ['yum'] });
  await applyPackages(context, {
    rubygems: { rake: ['13.0.6'], chef: [] },
    python: { requests: '2.31.0', six: [] },
    dnf: { vim: [] },
    yum: { tmux: [] },
    apt: { jq: [] },
    rpm: { epel: 'http://127.0.0.1/epel.rpm' },
  });
  assert.deepEqual(installs(runner.calls), [
    'rpm -U --replacepkgs http://127.0.0.1/epel.rpm',
    'apt-get install -y jq',
    'yum -y install tmux',
    'dnf -y install vim',
    'python3 -m pip install requests==2.31.0 six',
    'gem install -b --version 13.0.6 rake',
    'gem install -b chef',
  ]);
  assert.ok(runner.calls.some((call) => call.command === 'gem list -i rake -v 13.0.6'));
});

test('python: an installed package at another version is reinstalled at the asked one', async () => {
  const runner = recordingRunner((command) =>
    command.startsWith('python3 -m pip show') ? { exitCode: 0, stdout: 'Name: six\nVersion: 1.15.0\n' } : undefined,
  );
  const { context } = fakeContext(runner);
  await applyPackages(context, { python: { six: '1.16.0', requests: [] } });
  assert.deepEqual(installs(runner.calls), ['python3 -m pip install six==1.16.0']);
});

test('a failing install names the section, the manager and packages, and the exit code', async () => {
  const runner = recordingRunner((command) =>
    command.startsWith('dpkg-query') ? { exitCode: 1 } : { exitCode: 100, stderr: 'E: Unable to locate package nosuch' },
  );
  const { context } = fakeContext(runner);
  await assert.rejects(applyPackages(context, { apt: { nosuch: [] } }), (error: Error) => {
    assert.ok(error instanceof StepError);
    assert.equal(error.section, 'packages');
    assert.equal(error.key, 'apt: nosuch');
    assert.equal(error.exitCode, 100);
    assert.match(
      error.message,
      /packages: apt: nosuch: apt-get install -y nosuch failed: E: Unable to locate package nosuch \(exit code 100\)/,
    );
    return true;
  });
  assert.equal(context.changes.packages.size, 0);
});

test('an unknown manager or a malformed entry is refused before anything runs', async () => {
  const runner = recordingRunner();
  const { context } = fakeContext(runner);
  await assert.rejects(applyPackages(context, { apt: { a: [] }, msi: { x: 'http://x' } }), /packages: msi: unknown package manager/);
  await assert.rejects(applyPackages(context, { apt: ['curl'] }), /packages: apt: must be an object/);
  await assert.rejects(applyPackages(context, { apt: { curl: { v: 1 } } }), /packages: apt.curl: version must be a string/);
  assert.deepEqual(runner.calls, []);
});
