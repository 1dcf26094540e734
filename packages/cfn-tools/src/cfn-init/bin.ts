// The cfn-init executable.
import { runMain } from '@hearth/agent-kit/exit';
import { runCfnInit } from './main.ts';

runMain((argv) => runCfnInit(argv), { name: 'cfn-init' });
