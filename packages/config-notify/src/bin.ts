import { runMain } from '@hearth/agent-kit';
import { main } from './main.ts';

runMain((argv) => main(argv), { name: 'heat-config-notify' });
