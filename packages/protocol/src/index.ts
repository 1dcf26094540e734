export * from './common.ts';
export * from './errors.ts';
export * from './software-config.ts';
export * from './software-deployment.ts';
export * from './metadata.ts';
export * from './signal.ts';
export * from './event.ts';
export * from './server.ts';
