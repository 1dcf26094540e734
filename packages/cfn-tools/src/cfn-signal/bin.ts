import { runMain } from '@hearth/agent-kit/exit';
import { cfnSignalMain } from './main.ts';

runMain((argv) => cfnSignalMain(argv));
