// A throwaway PostgreSQL for running the test suite against (CI, or a developer's machine):
//   npx tsx scripts/postgres.ts start STATE_FILE   initdb + start on a free loopback port; prints the URL
//   npx tsx scripts/postgres.ts stop STATE_FILE    stops it and removes its temp dir and STATE_FILE
// STATE_FILE holds {url, dir, port, bin}. The server is daemonized by pg_ctl and outlives this script.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { postgresCluster, startPostgres, type PostgresClusterState } from '../test/helpers/postgres.ts';

const USAGE = 'usage: npx tsx scripts/postgres.ts start|stop STATE_FILE';

/** What STATE_FILE holds. */
interface State extends PostgresClusterState {
  /** Superuser URL (trust auth, loopback only): use as HEARTH_TEST_POSTGRES_URL. */
  url: string;
}

async function start(stateFile: string): Promise<void> {
  if (existsSync(stateFile)) {
    throw new Error(`${stateFile} exists: a cluster may still be running (stop it with: npx tsx scripts/postgres.ts stop ${stateFile})`);
  }
  const cluster = await startPostgres();
  const state: State = { url: cluster.url, dir: cluster.dir, port: cluster.port, bin: cluster.bin };
  try {
    writeFileSync(stateFile, `${JSON.stringify(state, null, 2)}\n`);
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  console.log(cluster.url);
}

async function stop(stateFile: string): Promise<void> {
  if (!existsSync(stateFile)) {
    console.error(`${stateFile} does not exist: nothing to stop`);
    return;
  }
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as State;
  await postgresCluster(state).stop();
  rmSync(stateFile, { force: true });
  console.error(`stopped PostgreSQL on port ${state.port} and removed ${state.dir}`);
}

const [command, stateFile] = process.argv.slice(2);
if (!stateFile || (command !== 'start' && command !== 'stop')) {
  console.error(USAGE);
  process.exit(64);
}
try {
  await (command === 'start' ? start(stateFile) : stop(stateFile));
} catch (error) {
  console.error(`postgres ${command}: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
