export { run } from './run.ts';
export { buildProgram } from './program.ts';
export { EXIT, ExitError, type ExitCode } from './errors.ts';
export { type CliDeps } from './session.ts';
export { type CliIo, type TextSink, processIo } from './io.ts';
export { resolveGlobalOptions, type GlobalOptions, type GlobalFlags, DEFAULT_URL, DEFAULT_PROJECT } from './options.ts';
