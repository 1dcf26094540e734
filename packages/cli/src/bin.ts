import { createClient } from '@hearth/client';
import { processIo } from './io.ts';
import { run } from './run.ts';

process.exit(await run(process.argv.slice(2), { io: processIo(), createClient }));
