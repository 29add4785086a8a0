// `npm run admin -- <command>`: operator commands that no API credential can perform.
//   create-org --name <name>     prints {"org_id", "org_name", "api_key"} as JSON
import { parseArgs } from 'node:util';
import { loadConfig } from './config.ts';
import { createLogger } from '../../shared/logger.ts';
import { openDatabase } from './db/connect.ts';
import { migrate } from './db/migrate.ts';
import { createOrgWithKey } from './modules/workspace/orgs.ts';
import type { Sql } from 'postgres';

type Command = (sql: Sql, args: string[]) => Promise<unknown>;

export const commands: Record<string, { usage: string; run: Command }> = {
  'create-org': {
    usage: 'create-org --name <name>',
    async run(sql, args) {
      const { values } = parseArgs({ args, options: { name: { type: 'string' } }, strict: true });
      if (!values.name || values.name.length > 255) throw new UsageError('--name is required (1-255 characters)');
      return createOrgWithKey(sql, values.name);
    },
  },
};

export class UsageError extends Error {}

function usage(): string {
  return `usage: npm run admin -- <command>\n${Object.values(commands)
    .map((c) => `  ${c.usage}`)
    .join('\n')}\n`;
}

export async function runAdmin(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const command = name ? commands[name] : undefined;
  if (!command) {
    process.stderr.write(usage());
    return 2;
  }
  const config = loadConfig();
  const log = createLogger('admin', process.env.LOG_LEVEL ?? 'warn');
  const db = await openDatabase(config, log);
  try {
    await migrate(db.sql);
    const result = await command.run(db.sql, args);
    process.stdout.write(JSON.stringify(result) + '\n');
    return 0;
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`admin: ${(err as Error).message}\n${usage()}`);
      return 2;
    }
    throw err;
  } finally {
    await db.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runAdmin(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`admin: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
