// The in-guest agent commands, as command name -> entry point: what scripts/bundle-agents.mjs
// bundles and scripts/build-agent.mjs builds, from one list, so a new command reaches both.
export const AGENT_COMMANDS = {
  'os-collect-config': 'packages/collect-config/src/bin.ts',
  'os-refresh-config': 'packages/refresh-config/src/bin.ts',
  'dib-run-parts': 'packages/refresh-config/src/dib-run-parts-bin.ts',
  'os-apply-config': 'packages/apply-config/src/bin.ts',
  'heat-config': 'packages/heat-config/src/bin.ts',
  'heat-config-notify': 'packages/config-notify/src/bin.ts',
  'cfn-init': 'packages/cfn-tools/src/cfn-init/bin.ts',
  'cfn-signal': 'packages/cfn-tools/src/cfn-signal/bin.ts',
  'cfn-hup': 'packages/cfn-tools/src/cfn-hup/bin.ts',
  'cfn-get-metadata': 'packages/cfn-tools/src/cfn-get-metadata/bin.ts',
  'cfn-push-stats': 'packages/cfn-tools/src/cfn-push-stats/bin.ts',
};
