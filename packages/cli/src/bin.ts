import { createClient } from '@hearth/client';
import { EXIT } from './errors.ts';
import { flushed, processIo, STDOUT_CLOSED_EXIT } from './io.ts';
import { run } from './run.ts';

/** The first error writing stdout other than its reader leaving (a full disk): success is then not reported. */
let stdoutError: Error | undefined;
// Without these listeners a write to a pipe whose reader left throws from an event, with a stack trace. hearth
// keeps no state of its own to leave half-done: once its stdout's reader has gone it ends at once, quietly.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(STDOUT_CLOSED_EXIT);
  stdoutError ??= error;
});
process.stderr.on('error', () => undefined);

const code = await run(process.argv.slice(2), { io: processIo(), createClient });
// A failed last write is only reported (to the listener above) once handed to the OS.
await flushed(process.stdout);
if (code === EXIT.OK && stdoutError) process.stderr.write(`hearth: cannot write stdout: ${stdoutError.message}\n`);
process.exit(code === EXIT.OK && stdoutError ? EXIT.FAILED : code);
