import { runMain } from '@hearth/agent-kit/exit';
import { cfnPushStatsMain } from './main.ts';

runMain((argv) => cfnPushStatsMain(argv));
