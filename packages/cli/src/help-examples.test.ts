import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { HearthClient } from '@hearth/client';
import type { Command } from 'commander';
import { startServer, type TestServer } from '../../../test/helpers/server.ts';
import type { CliIo } from './io.ts';
import { buildProgram } from './program.ts';
import { run } from './run.ts';
import { runWithClient } from './test-support.ts';

// Every `$ hearth ...` line of every --help must be a command line hearth takes: parsed by commander
// and checked by the command's own flag checks, up to the request it would send. Some run for real.

/** Ids an example's `$NAME` words stand for, as the earlier commands would have printed them. */
const PLACEHOLDERS: Record<string, string> = {
  $CONFIG_ID: '0190f1a2-7b3c-7d4e-8f50-61728394a5b6',
  $DEPLOYMENT_ID: '0190f1a2-7b3c-7d4e-8f50-61728394a5b7',
  $ALARM_URL: 'http://127.0.0.1:8000/v1/signal/arn%3Aopenstack%3Aheat/policy?token=x',
  $SERVER_TOKEN: 'AK0001:secret0001',
};

/** Files the examples name, as hearth would read them. */
const FILES: Record<string, string> = {
  'install.sh': '#!/bin/sh\necho installing\n',
  'site.yml': '- hosts: all\n',
  'site-definition.yaml': 'inputs:\n  - name: hosts\n    type: CommaDelimitedList\noutputs:\n  - name: result\n',
};

/** Splits an example line into words as sh would: single quotes keep spaces and are removed. */
function shellWords(line: string): string[] {
  return (line.match(/(?:'[^']*'|[^\s'])+/g) ?? []).map((word) => word.replace(/'([^']*)'/g, '$1'));
}

/** An IO that keeps what is written and reads FILES. */
function captureIo(env: Record<string, string>): CliIo & { out: { stdout: string; stderr: string } } {
  const out = { stdout: '', stderr: '' };
  return {
    out,
    stdout: { write: (text) => void (out.stdout += text) },
    stderr: { write: (text) => void (out.stderr += text) },
    env,
    readTextFile: async (path) => {
      const text = FILES[path];
      if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
      return text;
    },
    now: () => Date.now(),
  };
}

/** Every command of the tree, as the words that name it (the program itself: []). */
function commandPaths(command: Command, path: string[] = []): string[][] {
  return [path, ...command.commands.flatMap((sub) => commandPaths(sub, [...path, sub.name()]))];
}

/** The --help of the command `path` names, as `hearth PATH --help` prints it. */
async function helpOf(path: string[]): Promise<string> {
  const io = captureIo({});
  const code = await run([...path, '--help'], { io, createClient: () => assert.fail('--help made a client') });
  assert.equal(code, 0, io.out.stderr);
  return io.out.stdout;
}

/** The `$ hearth ...` lines of a --help's Examples section. */
function exampleLines(help: string): string[] {
  const section = /\nExamples:\n((?: {2}.*\n)+)/.exec(help)?.[1] ?? '';
  return [...section.matchAll(/^ {2}\$ (hearth .*)$/gm)].map((match) => match[1] ?? '');
}

/** Thrown by the stand-in client: the command got as far as sending its request. */
class RequestReached extends Error {}

const allPaths = commandPaths(buildProgram({ io: captureIo({}), createClient: () => assert.fail() }));

test('the program, every command group and the most used commands show Examples in --help', async () => {
  const groups = allPaths.filter((path) => path.length === 1);
  const mostUsed = [
    ['server', 'create'],
    ['config', 'create'],
    ['deployment', 'create'],
    ['deployment', 'wait'],
  ];
  for (const path of [[], ...groups, ...mostUsed]) {
    const help = await helpOf(path);
    assert.ok(exampleLines(help).length > 0, `hearth ${path.join(' ')} --help has no examples:\n${help}`);
    // After the command's own options, before the Environment section every --help ends with.
    assert.ok(help.indexOf('\nExamples:\n') > help.indexOf('Options:'), `hearth ${path.join(' ')} --help`);
    assert.ok(help.indexOf('\nExamples:\n') < help.indexOf('\nEnvironment:\n'), `hearth ${path.join(' ')} --help`);
  }
  assert.match((await helpOf(['events'])).split('\nExamples:\n')[1] ?? '', /\$ hearth events --follow/);
});

test('every example in every --help is a command line hearth takes, up to its request', async () => {
  let checked = 0;
  for (const path of allPaths) {
    for (const line of exampleLines(await helpOf(path))) {
      const words = shellWords(line).map((word) => PLACEHOLDERS[word] ?? word);
      assert.equal(words[0], 'hearth');
      assert.ok(
        words.every((word) => !word.startsWith('$')),
        `${line}: a $NAME with no placeholder value`,
      );
      const io = captureIo({ HEARTH_TOKEN: 'admin' });
      // A client whose every call stops the command: reaching one means parsing and flag checks passed.
      const stop = (): never => {
        throw new RequestReached();
      };
      const client = new Proxy({}, { get: () => stop }) as HearthClient;
      const error = await buildProgram({ io, createClient: () => client })
        .parseAsync(words.slice(1), { from: 'user' })
        .then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
      assert.ok(error instanceof RequestReached, `${line}\n  -> ${String(error)}\n${io.out.stderr}`);
      checked += 1;
    }
  }
  assert.ok(checked >= 30, `only ${checked} examples found`);
});

test('shellWords keeps quoted spaces and drops the quotes', () => {
  assert.deepEqual(shellWords(`hearth x --config 'echo a > /tmp/b' --input 'h:=["a","b"]' y`), [
    'hearth',
    'x',
    '--config',
    'echo a > /tmp/b',
    '--input',
    'h:=["a","b"]',
    'y',
  ]);
});

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.close());

test('the first-deployment examples of hearth --help work against a real hearth-server', async () => {
  const env = { HEARTH_URL: server.url, HEARTH_TOKEN: server.token };
  const ids: Record<string, string> = {};
  /** Runs an example line with the ids so far; the result's stdout is parsed when `json`. */
  const example = async (line: string, json = false) => {
    const words = shellWords(line)
      .slice(1)
      .map((word) => ids[word] ?? word);
    const result = await runWithClient(json ? [...words, '--json'] : words, env);
    assert.equal(result.code, 0, `${line}: ${result.stderr}`);
    return { ...result, document: json ? (JSON.parse(result.stdout) as Record<string, { id: string }>) : {} };
  };
  const programExamples = exampleLines(await helpOf([]));
  const [serverCreate, configCreate, deploymentCreate, deploymentWait] = programExamples;
  assert.ok(serverCreate && configCreate && deploymentCreate && deploymentWait, programExamples.join('\n'));
  await example(serverCreate);
  ids.$CONFIG_ID = (await example(configCreate, true)).document.software_config?.id ?? '';
  // The deployment of the program's example waits for an agent; deployment create's --no-signal one does not.
  const noSignal = exampleLines(await helpOf(['deployment', 'create'])).find((line) => line.includes('--no-signal'));
  assert.ok(noSignal);
  assert.equal(
    (await example(deploymentCreate, true)).document.software_deployment?.id.length,
    36,
    'the program example created a deployment',
  );
  ids.$DEPLOYMENT_ID = (await example(noSignal, true)).document.software_deployment?.id ?? '';
  const waited = await example(deploymentWait);
  assert.match(waited.stdout, /^status: +COMPLETE$/m);
  for (const line of exampleLines(await helpOf(['deployment', 'wait']))) await example(line);
  const byResource = exampleLines(await helpOf(['events'])).find((line) => line.includes('--resource'));
  assert.ok(byResource);
  const events = await example(byResource);
  assert.match(events.stdout, /deployment\.created/);
});
