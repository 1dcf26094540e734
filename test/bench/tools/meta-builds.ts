// Diagnostic (not run by `npm run bench`): authenticated metadata 304s of several hearth builds side
// by side with the bare fastify route, in interleaved rounds (each round starts with a different
// config), as run.ts does for one build. A build is the root of a checkout (e.g. `git worktree add
// /tmp/before <commit>`, with its own node_modules or a symlink to this one's). Prints req/s and the
// server's CPU µs per request per round, and each build's median ratio to the bare route.
// Usage: tsx test/bench/tools/meta-builds.ts <seconds> <rounds> <root>...
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeSetupClient, createMetaFixture } from '../fixtures.ts';
import { measure, waitForIdle, type Load } from '../measure.ts';
import { fmtRate, median } from '../report.ts';
import { killChildren, startServer, stopServer, type ServerProc } from '../processes.ts';

const [secondsArg, roundsArg, ...roots] = process.argv.slice(2);
const SECONDS = Number(secondsArg);
const ROUNDS = Number(roundsArg);
if (!SECONDS || !ROUNDS || roots.length === 0) throw new Error('usage: meta-builds.ts <seconds> <rounds> <root>...');
const MAX_LIFETIME_MS = (ROUNDS * (roots.length + 1) * (SECONDS + 12) + 120) * 1000;
const watchdog = setTimeout(() => {
  killChildren();
  process.exit(3);
}, MAX_LIFETIME_MS + 30_000).unref();

const dir = mkdtempSync(join(tmpdir(), 'meta-builds-'));
const servers: ServerProc[] = [];
try {
  const loads: Array<{ name: string; load: Load }> = [];
  for (const [i, root] of roots.entries()) {
    const server = await startServer(`hearth-${i}`, 'hearth.ts', [join(dir, `data-${i}`)], { maxLifetimeMs: MAX_LIFETIME_MS, root });
    servers.push(server);
    const fixture = await createMetaFixture([server.url]);
    const headers = [`authorization: ${fixture.auth}`, `if-none-match: ${fixture.etags[0]}`];
    loads.push({
      name: `${i}: ${root}`,
      load: { server, script: 'meta.lua', url: `${server.url}/v1/guest/metadata`, headers, scriptArgs: [], connections: 64 },
    });
    if (i === 0) {
      const bodyFile = join(dir, 'document.json');
      writeFileSync(bodyFile, fixture.document);
      const bare = await startServer('bare', 'bare-meta.ts', [bodyFile, fixture.etags[0]!], { maxLifetimeMs: MAX_LIFETIME_MS });
      servers.push(bare);
      loads.push({ name: 'bare fastify', load: { ...loads[0]!.load, server: bare, url: `${bare.url}/v1/guest/metadata` } });
    }
  }
  const rates = new Map<string, number[]>(loads.map(({ name }) => [name, []]));
  const cpu = new Map<string, number[]>(loads.map(({ name }) => [name, []]));
  for (const { load } of loads) await measure([load], 3); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < loads.length; k++) {
      const { name, load } = loads[(round + k) % loads.length]!;
      const idle = await waitForIdle(80, 8);
      const { outs, serverPct } = await measure([load], SECONDS);
      const out = outs[0]!;
      const bad = out.requests - (out.statuses['304'] ?? 0);
      if (bad !== 0) throw new Error(`${name}: ${bad} replies other than 304`);
      const rate = out.requests / (out.duration_us / 1e6);
      const us = (serverPct[0]! / 100) * (1e6 / rate);
      rates.get(name)!.push(rate);
      cpu.get(name)!.push(us);
      console.log(`round ${round + 1} ${name.padEnd(40)} ${fmtRate(rate)} req/s  ${us.toFixed(0)} µs/req  (idle ${idle.idle} %)`);
    }
  }
  const bare = rates.get('bare fastify')!;
  for (const { name } of loads) {
    const perRound = rates.get(name)!.map((r, i) => r / bare[i]!);
    console.log(
      `${name.padEnd(40)} ${fmtRate(median(rates.get(name)!))} req/s  ${median(cpu.get(name)!).toFixed(0)} µs/req  ` +
        `ratio to bare ${median(perRound).toFixed(2)} [${perRound.map((r) => r.toFixed(2)).join(' ')}]`,
    );
  }
} finally {
  closeSetupClient();
  await Promise.all(servers.map((server) => stopServer(server)));
  rmSync(dir, { recursive: true, force: true });
  clearTimeout(watchdog);
}
