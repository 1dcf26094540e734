// @hearth/cfn-tools: the shared plumbing (credentials, metadata with its cache and fallbacks) and
// cfn-init's API; each command is src/<command>/bin.ts.
export * from './shared/index.ts';
export * as cfnInit from './cfn-init/index.ts';
