// Keeps a benchmark server process bounded: it exits when the orchestrator closes its stdin (so a
// killed orchestrator never leaves servers behind), on SIGTERM/SIGINT, and after a hard lifetime.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Session } from 'node:inspector';
import type { FastifyInstance } from 'fastify';

/** Hard upper bound on a server process's life, in ms (the whole benchmark takes ~5 min). */
const MAX_LIFETIME_MS = Number(process.env.BENCH_MAX_LIFETIME_MS ?? 15 * 60_000);

/**
 * With BENCH_PROFILE_DIR set, SIGUSR2 starts the V8 CPU profiler and the next SIGUSR2 writes
 * `<dir>/<BENCH_PROFILE_NAME>-<n>.cpuprofile` and prints `{"profile": path}` on stdout. This
 * profiles one measured run only, without start-up and fixture creation. The profile is wall-clock
 * sampling: on a loaded 2-vCPU machine, time the process spent preempted shows up in whatever frame
 * it was in (often the socket write that woke the client).
 */
function installProfilerToggle(): void {
  const dir = process.env.BENCH_PROFILE_DIR;
  if (!dir) return;
  const session = new Session();
  session.connect();
  let running = false;
  let n = 0;
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));
  process.on('SIGUSR2', () => {
    if (!running) {
      running = true;
      void post('Profiler.enable')
        .then(() => post('Profiler.setSamplingInterval', { interval: 200 }))
        .then(() => post('Profiler.start'));
      return;
    }
    running = false;
    void post('Profiler.stop').then((result) => {
      const file = join(dir, `${process.env.BENCH_PROFILE_NAME ?? 'server'}-${++n}.cpuprofile`);
      writeFileSync(file, JSON.stringify((result as { profile: unknown }).profile));
      process.stdout.write(`${JSON.stringify({ profile: file })}\n`);
    });
  });
}

/** Installs the exits; `app` is closed gracefully when there is time. */
export function boundLifetime(app: FastifyInstance): void {
  installProfilerToggle();
  let stopping = false;
  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(code), 5000).unref();
    app.close().then(
      () => process.exit(code),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop(0));
  process.on('SIGINT', () => stop(0));
  process.stdin.on('end', () => stop(0));
  process.stdin.on('error', () => stop(0));
  process.stdin.resume();
  setTimeout(() => {
    process.stderr.write(`bench server ${process.pid}: lifetime of ${MAX_LIFETIME_MS} ms reached, exiting\n`);
    stop(2);
  }, MAX_LIFETIME_MS).unref();
}

/** Tells the orchestrator the server is listening (one JSON line on stdout). */
export function announceReady(port: number): void {
  process.stdout.write(`${JSON.stringify({ ready: true, pid: process.pid, port })}\n`);
}
