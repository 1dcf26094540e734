import { runMain } from '@hearth/agent-kit';
import { main } from './main.ts';

void runMain((argv) => main(argv), { name: 'os-collect-config' });
