export * from './deployment.ts';
export * from './inputs.ts';
export * from './dirs.ts';
export * from './outputs.ts';
export * from './python-json.ts';
export * from './result.ts';
export * from './tool.ts';
export * from './hook.ts';
