import { runMain } from '@hearth/agent-kit/exit';
import { cfnGetMetadataMain } from './main.ts';

runMain((argv) => cfnGetMetadataMain(argv));
