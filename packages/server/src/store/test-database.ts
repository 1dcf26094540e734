// Test support: a fresh PostgreSQL database per test app, so the server suite can run against
// PostgreSQL (HEARTH_TEST_STORE=postgres with HEARTH_TEST_POSTGRES_URL, set by scripts/run-tests.mjs).
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** A database created for one test (or one group of processes sharing it). */
export interface TestDatabase {
  /** Its URL: the admin URL with the database name replaced. */
  url: string;
  /** Drops it, disconnecting whoever is still connected; a database already gone is fine. */
  drop(): Promise<void>;
}

/** SQLSTATE invalid_catalog_name: the database does not exist. */
const NO_SUCH_DATABASE = '3D000';

/** True in the PostgreSQL pass of the test suite (env HEARTH_TEST_STORE=postgres). */
export function postgresTestPass(): boolean {
  return process.env.HEARTH_TEST_STORE === 'postgres';
}

/**
 * Creates database `hearth_t_<random hex>` through `adminUrl` (a superuser's URL, e.g.
 * postgres://postgres@127.0.0.1:5432/postgres), with the server's default locale or `locale`
 * (e.g. en_US.utf8, as many distributions' initdb picks; it must exist on the PostgreSQL host).
 */
export async function createTestDatabase(adminUrl: string, { locale }: { locale?: string } = {}): Promise<TestDatabase> {
  if (!URL.canParse(adminUrl)) throw new Error(`the test PostgreSQL URL is not a URL: ${adminUrl}`);
  if (locale !== undefined && !/^[\w.@-]+$/.test(locale)) throw new Error(`not a locale name: ${locale}`);
  const name = `hearth_t_${randomBytes(8).toString('hex')}`;
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const withLocale = locale ? ` TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE '${locale}' LC_CTYPE '${locale}'` : '';
  await onAdmin(adminUrl, `CREATE DATABASE "${name}"${withLocale}`);
  return {
    url: url.toString(),
    async drop() {
      try {
        await onAdmin(adminUrl, `DROP DATABASE "${name}" WITH (FORCE)`);
      } catch (error) {
        if ((error as { code?: unknown }).code !== NO_SUCH_DATABASE) throw error;
      }
    },
  };
}

/** In the PostgreSQL pass, a fresh database on HEARTH_TEST_POSTGRES_URL; otherwise undefined (SQLite in the data dir). */
export async function testDatabaseUrl(): Promise<TestDatabase | undefined> {
  if (!postgresTestPass()) return undefined;
  const adminUrl = process.env.HEARTH_TEST_POSTGRES_URL;
  if (!adminUrl) {
    throw new Error(
      'HEARTH_TEST_STORE=postgres needs HEARTH_TEST_POSTGRES_URL, a superuser URL of a throwaway server ' +
        '(npx tsx scripts/postgres.ts start /tmp/pg.json prints one)',
    );
  }
  return createTestDatabase(adminUrl);
}

/** Runs one statement on a short-lived admin connection, bounded in time. */
async function onAdmin(adminUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000, query_timeout: 60_000 });
  client.on('error', () => undefined); // a connection lost mid-statement also rejects the statement: reported there
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`cannot reach the test PostgreSQL at ${withoutPassword(adminUrl)}: ${(error as Error).message}`, { cause: error });
  }
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** The URL with its password (if any) hidden, for messages. */
function withoutPassword(url: string): string {
  if (!URL.canParse(url)) return '(not a URL)';
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}
