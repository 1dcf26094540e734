import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { verifyEc2Signature } from '@hearth/protocol/signing';
import { runBin } from '../shared/run-bin.ts';
import { cfnPushStatsMain } from './main.ts';
import { collectMetrics, systemInformationSource } from './metrics.ts';
import { parseCfnPushStatsArgs } from './options.ts';

const KEY = 'AKPUSH';
const SECRET = 'push-secret';

/** A loopback CloudWatch receiver: checks the v2 signature over the form body, records the parameters. */
async function receiver() {
  const received: Array<Record<string, string>> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const params = Object.fromEntries(new URLSearchParams(body));
      const verified = verifyEc2Signature(
        { method: req.method ?? '', host: req.headers.host ?? '', path: req.url ?? '', params, headers: req.headers, body },
        SECRET,
      );
      const form = (req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
      if (!verified.ok || !form || req.method !== 'POST') {
        res
          .writeHead(403)
          .end(
            `<ErrorResponse><Error><Code>AccessDenied</Code><Message>${verified.ok ? 'not a form POST' : verified.message}</Message></Error></ErrorResponse>`,
          );
        return;
      }
      received.push(params);
      res.writeHead(200).end('<PutMetricDataResponse/>');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
  return { received, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

function sink() {
  let text = '';
  return { stream: new Writable({ write: (chunk: Buffer, _e, done) => ((text += chunk.toString()), done()) }), text: () => text };
}

function metric(params: Record<string, string>) {
  const dims: string[] = [];
  for (let i = 1; params[`MetricData.member.1.Dimensions.member.${i}.Name`]; i++) {
    dims.push(`${params[`MetricData.member.1.Dimensions.member.${i}.Name`]}=${params[`MetricData.member.1.Dimensions.member.${i}.Value`]}`);
  }
  return {
    name: params['MetricData.member.1.MetricName'],
    unit: params['MetricData.member.1.Unit'],
    value: Number(params['MetricData.member.1.Value']),
    dims,
  };
}

const keys = ['--access-key', KEY, '--secret-key', SECRET];
const env = { HEARTH_ROOT: mkdtempSync(join(tmpdir(), 'cfn-push-stats-')) };

test('heartbeat, service failure and a custom metric: one signed form POST each, namespace system/linux, InstanceId and AlarmName', async (t) => {
  const rec = await receiver();
  t.after(() => rec.close());
  const code = await cfnPushStatsMain(
    [
      ...keys,
      '--url',
      rec.url,
      '--heartbeat',
      '--service-failure',
      '--watch',
      'HighLoad',
      '--metric',
      'QueueDepth',
      '--units',
      'Count',
      '--value',
      '42.5',
    ],
    {
      env,
      stderr: sink().stream,
    },
  );
  assert.equal(code, 0);
  // in the original's order (Debian's cfn-push-stats against a loopback receiver): the custom metric first
  assert.deepEqual(rec.received.map(metric), [
    { name: 'QueueDepth', unit: 'Count', value: 42.5, dims: [`InstanceId=${hostname()}`, 'AlarmName=HighLoad'] },
    { name: 'ServiceFailure', unit: 'Counter', value: 1, dims: [`InstanceId=${hostname()}`, 'AlarmName=HighLoad'] },
    { name: 'Heartbeat', unit: 'Counter', value: 1, dims: [`InstanceId=${hostname()}`, 'AlarmName=HighLoad'] },
  ]);
  assert.ok(
    rec.received.every(
      (params) => params.Action === 'PutMetricData' && params.Namespace === 'system/linux' && params.SignatureVersion === '2',
    ),
  );
});

test('system metrics come from systeminformation with the original’s names and units, tags from nova_meta.json', async (t) => {
  const rec = await receiver();
  t.after(() => rec.close());
  const root = mkdtempSync(join(tmpdir(), 'cfn-push-stats-'));
  mkdirSync(join(root, 'var/lib/heat-cfntools'), { recursive: true });
  writeFileSync(join(root, 'var/lib/heat-cfntools/nova_meta.json'), '{"uuid": "i-123", "meta": {"metering.stack": "web"}}');
  const code = await cfnPushStatsMain(
    [
      ...keys,
      '--url',
      rec.url,
      '--mem-util',
      '--mem-used',
      '--mem-avail',
      '--swap-util',
      '--disk-space-util',
      '--disk-space-avail',
      '--disk-units',
      'Kilobytes',
    ],
    {
      env: { HEARTH_ROOT: root },
      stderr: sink().stream,
    },
  );
  assert.equal(code, 0);
  const sent = rec.received.map(metric);
  // a size's Unit is the original's: the --memory-units/--disk-units word, lowercase (it sent args.memory_units)
  assert.deepEqual(
    sent.map((m) => [m.name, m.unit]),
    [
      ['MemoryUtilization', 'Percent'],
      ['MemoryUsed', 'megabytes'],
      ['MemoryAvailable', 'megabytes'],
      ['SwapUtilization', 'Percent'],
      ['DiskSpaceUtilization', 'Percent'],
      ['DiskSpaceAvailable', 'kilobytes'],
    ],
  );
  assert.deepEqual(sent[0]!.dims, ['metering.stack=web', 'InstanceId=i-123']);
  const meminfo = Object.fromEntries(
    readFileSync('/proc/meminfo', 'utf8')
      .split('\n')
      .map((line) => [line.split(':')[0], Number.parseInt(line.split(':')[1] ?? '0', 10) * 1024]),
  );
  const availableMb = meminfo.MemAvailable! / 1024 ** 2;
  assert.ok(
    Math.abs(sent[2]!.value - availableMb) < availableMb * 0.2 + 64,
    `MemoryAvailable ${sent[2]!.value} MB vs /proc/meminfo ${availableMb} MB`,
  );
  for (const m of [sent[0]!, sent[3]!, sent[4]!]) assert.ok(m.value >= 0 && m.value <= 100, `${m.name} ${m.value}`);
  assert.ok(sent[5]!.value > 0);
});

test('DiskSpaceUtilization is used / (used + available), as psutil and df count it, not used / size', async (t) => {
  const fromFigures = await collectMetrics(parseCfnPushStatsArgs(['--disk-space-util']), {
    memory: () => Promise.reject(new Error('not asked')),
    cpuPercent: () => Promise.reject(new Error('not asked')),
    // 10 of 100 reserved for root: full for users at 90 used.
    disk: () => Promise.resolve({ size: 100, used: 90, available: 0 }),
  });
  assert.deepEqual(fromFigures, [{ name: 'DiskSpaceUtilization', unit: 'Percent', value: 100 }]);

  // And from the real filesystem, against statfs (what psutil.disk_usage reads).
  const dir = mkdtempSync(join(tmpdir(), 'cfn-push-stats-disk-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const [datum] = await collectMetrics(parseCfnPushStatsArgs(['--disk-space-util', '--disk-path', dir]), systemInformationSource());
  const fs = statfsSync(dir);
  const used = (fs.blocks - fs.bfree) * fs.bsize;
  const expected = (100 * used) / (used + fs.bavail * fs.bsize);
  assert.ok(datum !== undefined && Math.abs(datum.value - expected) < 0.5, `DiskSpaceUtilization ${datum?.value} vs statfs ${expected}`);
});

test('a refused datum (wrong secret) exits 1 with the reason; no credentials or no endpoint are errors', async (t) => {
  const rec = await receiver();
  t.after(() => rec.close());
  const err = sink();
  const code = await cfnPushStatsMain(['--access-key', KEY, '--secret-key', 'wrong', '--url', rec.url, '--heartbeat'], {
    env,
    stderr: err.stream,
  });
  assert.equal(code, 1);
  assert.match(err.text(), /metric not accepted.*403.*AccessDenied/);
  await assert.rejects(cfnPushStatsMain(['--url', rec.url, '--heartbeat'], { env }), /no credentials/);
  await assert.rejects(cfnPushStatsMain([...keys, '--heartbeat'], { env }), /no endpoint/);
  assert.throws(() => parseCfnPushStatsArgs(['--metric', 'x']), /go together/);
  assert.throws(() => parseCfnPushStatsArgs(['--memory-units', 'pages']), /must be one of bytes/);
  assert.throws(() => parseCfnPushStatsArgs(['--haproxy']), /not supported/);
});

test('the default endpoint is the CFN host on port 8003', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cfn-push-stats-'));
  mkdirSync(join(root, 'var/lib/heat-cfntools'), { recursive: true });
  writeFileSync(join(root, 'var/lib/heat-cfntools/cfn-metadata-server'), 'http://127.0.0.1:8000/v1/');
  const urls: string[] = [];
  const code = await cfnPushStatsMain([...keys, '--heartbeat'], {
    env: { HEARTH_ROOT: root },
    stderr: sink().stream,
    http: (options) => {
      urls.push(options.url);
      return Promise.resolve({ status: 200, headers: {}, body: Buffer.alloc(0), text: () => '', json: () => ({}) as never });
    },
  });
  assert.equal(code, 0);
  assert.deepEqual(urls, ['http://127.0.0.1:8003/v1/']);
});

test("the default host is cfn-boto-cfg's cloudwatch_region_endpoint, as boto's CloudWatchConnection takes it, port 8003", async () => {
  const root = mkdtempSync(join(tmpdir(), 'cfn-push-stats-'));
  mkdirSync(join(root, 'var/lib/heat-cfntools'), { recursive: true });
  // What Heat writes: the CFN API and the CloudWatch API (heat_watch_server_url) may be different hosts.
  writeFileSync(
    join(root, 'var/lib/heat-cfntools/cfn-boto-cfg'),
    '[Boto]\ndebug = 0\nis_secure = 0\nhttps_validate_certificates = 1\ncfn_region_name = heat\ncfn_region_endpoint = 127.0.0.1\n' +
      'cloudwatch_region_name = heat\ncloudwatch_region_endpoint = localhost\n',
  );
  writeFileSync(join(root, 'var/lib/heat-cfntools/cfn-metadata-server'), 'http://127.0.0.1:8000/v1/');
  const urls: string[] = [];
  const code = await cfnPushStatsMain([...keys, '--heartbeat'], {
    env: { HEARTH_ROOT: root },
    stderr: sink().stream,
    http: (options) => {
      urls.push(options.url);
      return Promise.resolve({ status: 200, headers: {}, body: Buffer.alloc(0), text: () => '', json: () => ({}) as never });
    },
  });
  assert.equal(code, 0);
  assert.deepEqual(urls, ['http://localhost:8003/v1/']);
});

test('--schedule keeps pushing on the cron schedule until stopped; a bad expression is a usage error', async (t) => {
  const rec = await receiver();
  t.after(() => rec.close());
  const controller = new AbortController();
  const running = cfnPushStatsMain([...keys, '--url', rec.url, '--heartbeat', '--schedule', '* * * * * *'], {
    env,
    stderr: sink().stream,
    signal: controller.signal,
  });
  // Three pushes take about 3 s; the cap is only for a schedule that stopped, and leaves room for a loaded machine
  // (node-cron skips a tick it was too late for).
  const started = Date.now();
  while (rec.received.length < 3 && Date.now() - started < 20_000) await new Promise((resolve) => setTimeout(resolve, 50));
  controller.abort();
  assert.equal(await running, 0);
  assert.ok(rec.received.length >= 3, `${rec.received.length} pushes`);
  await assert.rejects(
    cfnPushStatsMain([...keys, '--url', rec.url, '--heartbeat', '--schedule', 'every minute'], { env }),
    /is not a cron expression/,
  );
});

test('the bin runs as a process (systeminformation and node-cron loaded lazily)', async (t) => {
  const rec = await receiver();
  t.after(() => rec.close());
  const run = await runBin('cfn-push-stats', [...keys, '--url', rec.url, '--cpu-util'], { env });
  assert.equal(run.code, 0, run.stderr);
  const [cpu] = rec.received.map(metric);
  assert.equal(cpu?.name, 'CPUUtilization');
  assert.ok(cpu.value >= 0 && cpu.value <= 100);
});
