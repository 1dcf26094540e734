// libfaketime (Debian's `faketime`) steps a real process's wall clock while it runs, as NTP does to a VM
// that booted with a wrong clock. Only the wall clock moves: the monotonic clock is left alone, as NTP
// leaves it (and node aborts on a monotonic clock that goes back).
import { existsSync, writeFileSync } from 'node:fs';

const LIBFAKETIME = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1'].find(
  (path) => existsSync(path),
);

/** `skip` for a test that needs libfaketime: a reason when it is missing; with CI=true a missing one is a failure. */
export function faketimeSkip(): false | string {
  if (LIBFAKETIME) return false;
  const message = 'libfaketime not installed (apt-get install -y faketime)';
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true: a missing tool is a failure)`);
  return message;
}

/**
 * The environment that puts a process's wall clock under `file`'s control: it starts at `+0`; write an
 * offset such as `-2y` or `+3h` to the file to step the clock while the process runs.
 */
export function steppedClockEnv(file: string): Record<string, string> {
  if (!LIBFAKETIME) throw new Error('libfaketime not installed (apt-get install -y faketime)');
  writeFileSync(file, '+0\n');
  return {
    LD_PRELOAD: LIBFAKETIME,
    FAKETIME_TIMESTAMP_FILE: file,
    FAKETIME_NO_CACHE: '1',
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}
