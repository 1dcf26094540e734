import { runMain } from '@hearth/agent-kit/exit';
import { cfnHupMain } from './main.ts';

runMain((argv) => cfnHupMain(argv));
