import { runMain } from '@hearth/agent-kit/exit';
import { main } from './main.ts';

runMain((argv) => main(argv), { name: 'os-apply-config' });
