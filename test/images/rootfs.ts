// A minimal Debian root filesystem for the image test: debootstrap (minbase) from the machine's own apt mirror,
// kept as a tarball in a cache dir so that later runs on the same machine only unpack it; and a chroot runner
// with /proc mounted whose mount is undone on every path.
import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Where rootfs tarballs are kept between runs. Default /var/cache/hearth-test-images (HEARTH_TEST_IMAGES_CACHE). */
export const CACHE_DIR = process.env.HEARTH_TEST_IMAGES_CACHE ?? '/var/cache/hearth-test-images';

/** The Debian mirror and suite this machine installs from. */
export interface AptSource {
  /** Mirror base URL, e.g. http://deb.debian.org/debian. */
  mirror: string;
  /** Suite (codename), e.g. bookworm. */
  suite: string;
}

/** The first enabled `deb` source of `codename` in sources.list and sources.list.d (one-line and deb822 forms). */
export function aptSource(codename: string, etcApt = '/etc/apt'): AptSource {
  const files = [join(etcApt, 'sources.list')];
  const dir = join(etcApt, 'sources.list.d');
  if (existsSync(dir))
    files.push(
      ...readdirSync(dir)
        .filter((name) => /\.(list|sources)$/.test(name))
        .sort()
        .map((name) => join(dir, name)),
    );
  for (const file of files.filter((path) => existsSync(path))) {
    const text = readFileSync(file, 'utf8');
    if (file.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const field = (name: string) => new RegExp(`^${name}:\\s*(.+)$`, 'mi').exec(stanza)?.[1]?.trim();
        if (!/^deb$|\bdeb\b/.test(field('Types') ?? '') || /^no$/i.test(field('Enabled') ?? 'yes')) continue;
        const uri = field('URIs')?.split(/\s+/)[0];
        if (uri && (field('Suites') ?? '').split(/\s+/).includes(codename)) return { mirror: uri, suite: codename };
      }
    } else {
      for (const line of text.split('\n')) {
        const match = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line.trim());
        if (match && match[2] === codename) return { mirror: match[1]!, suite: codename };
      }
    }
  }
  throw new Error(`no enabled "deb" source for ${codename} in ${files.join(', ')}; configure apt or set HEARTH_TEST_IMAGES_MIRROR`);
}

/** This machine's Debian codename (VERSION_CODENAME in /etc/os-release). */
export function hostCodename(): string {
  const codename = /^VERSION_CODENAME=(\S+)$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1];
  if (!codename) throw new Error('no VERSION_CODENAME in /etc/os-release: not a Debian machine?');
  return codename.replace(/"/g, '');
}

/** Runs a command to completion, throwing with its stderr when it fails or times out. */
export function must(command: string, args: string[], timeoutMs: number): SpawnSyncReturns<string> {
  const result = spawnSync(command, args, { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw new Error(`${command} ${args.join(' ')}: ${result.error.message}`);
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} exited ${result.status}:\n${(result.stderr || result.stdout).slice(-4000)}`);
  return result;
}

/**
 * The cached minbase tarball for `source`, debootstrapped first when missing (cold: a minute or two). Built under a
 * temporary name and renamed into place, so an interrupted build never leaves a half tarball behind.
 */
export function cachedRootfsTarball(source: AptSource): { path: string; built: boolean } {
  const host = new URL(source.mirror).host.replace(/[^\w.-]/g, '_');
  const path = join(CACHE_DIR, `debian-${source.suite}-minbase-${host}.tar`);
  if (existsSync(path) && statSync(path).size > 0) return { path, built: false };
  mkdirSync(CACHE_DIR, { recursive: true });
  const work = join(CACHE_DIR, `build-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  try {
    must('debootstrap', ['--variant=minbase', source.suite, join(work, 'rootfs'), source.mirror], 15 * 60_000);
    must('tar', ['-C', join(work, 'rootfs'), '--numeric-owner', '-cf', join(work, 'rootfs.tar'), '.'], 5 * 60_000);
    renameSync(join(work, 'rootfs.tar'), path);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return { path, built: true };
}

/** Unpacks a rootfs tarball into `dir` (which must not exist yet). */
export function unpackRootfs(tarball: string, dir: string): void {
  mkdirSync(dir, { recursive: true });
  must('tar', ['-C', dir, '--numeric-owner', '-xf', tarball], 5 * 60_000);
}

/** A rootfs with /proc mounted; `close` undoes the mount (lazily, so a busy mount cannot keep it). */
export interface MountedRootfs {
  /** The rootfs directory. */
  dir: string;
  /** Runs a command inside it to completion. */
  run(args: string[], options?: { input?: string; env?: Record<string, string>; timeoutMs?: number }): SpawnSyncReturns<string>;
  /** Starts a long-running command inside it in a process group of its own; its stderr is kept for messages. */
  start(args: string[], env?: Record<string, string>): ChildProcess;
  /** What the started commands wrote on stderr. */
  log(): string;
  /** Kills everything started, unmounts /proc. Safe to call twice. */
  close(): Promise<void>;
}

/** The environment of a guest process: nothing of the host's leaks in (no NODE_EXTRA_CA_CERTS, no PATH). */
function guestEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    LANG: 'C.UTF-8',
    HOME: '/root',
    no_proxy: '127.0.0.1',
    ...extra,
  };
}

/** Mounts /proc into `dir` and returns a runner for chrooted commands. */
export function mountRootfs(dir: string): MountedRootfs {
  mkdirSync(join(dir, 'proc'), { recursive: true });
  must('mount', ['-t', 'proc', 'proc', join(dir, 'proc')], 30_000);
  let children: ChildProcess[] = [];
  let stderr = '';
  let closed = false;
  return {
    dir,
    run(args, options = {}) {
      return spawnSync('chroot', [dir, ...args], {
        encoding: 'utf8',
        input: options.input,
        env: guestEnv(options.env),
        timeout: options.timeoutMs ?? 60_000,
        killSignal: 'SIGKILL',
      });
    },
    start(args, env) {
      const child = spawn('chroot', [dir, ...args], { env: guestEnv(env), detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr = (stderr + chunk.toString()).slice(-200_000);
      });
      children.push(child);
      return child;
    },
    log: () => stderr,
    async close() {
      if (closed) return;
      closed = true;
      const running = children.filter((child) => child.exitCode === null && child.signalCode === null);
      for (const child of running) {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await Promise.all(
        running.map(
          (child) =>
            new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once('exit', resolve))),
        ),
      );
      children = [];
      spawnSync('umount', ['-l', join(dir, 'proc')], { timeout: 30_000 });
    },
  };
}
