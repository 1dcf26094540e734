// cfn-init's API (the command is bin.ts).
export * from './apply.ts';
export * from './config-sets.ts';
export * from './context.ts';
export * from './fetch-url.ts';
export * from './log.ts';
export * from './main.ts';
export * from './mustache.ts';
export * from './options.ts';
export * from './sections/commands.ts';
export * from './sections/files.ts';
export * from './sections/groups.ts';
export * from './sections/packages.ts';
export * from './sections/services.ts';
export * from './sections/sources.ts';
export * from './sections/users.ts';
