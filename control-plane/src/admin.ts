// `npm run admin -- <command>`: operator commands that no API credential can perform.
//   create-org --name <name>     prints {"org_id", "org_name", "api_key"} as JSON
//   set-limits --org <id> [--max-calls-per-day N] [--kb-token-budget N] [--max-concurrent-calls N] [--daily-spend-cap-cents N]
//                                prints {"org_id", "limits", "previous"} as JSON
//   set-destination-limits --org <id> [--extra-countries GB,FR|none] [--unblockable-types premium_rate,...|none]
//                                the destination ceiling: countries beyond the org's own numbers' it may allow,
//                                default-blocked number types it may unblock; prints {"org_id", "limits", "previous"}
import { parseArgs } from 'node:util';
import { loadConfig } from './config.ts';
import { createLogger } from '../../shared/logger.ts';
import { openDatabase } from './db/connect.ts';
import { migrate } from './db/migrate.ts';
import { createOrgWithKey } from './modules/workspace/orgs.ts';
import { setOrgDestinationLimits, setOrgLimits } from './modules/workspace/limits.ts';
import { getCountries } from 'libphonenumber-js/max';
import { DEFAULT_BLOCKED_NUMBER_TYPES, NON_GEOGRAPHIC, type NumberType } from '../../shared/destination-policy.ts';
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
  'set-limits': {
    usage: 'set-limits --org <id> [--max-calls-per-day N] [--kb-token-budget N] [--max-concurrent-calls N] [--daily-spend-cap-cents N]',
    async run(sql, args) {
      const { values } = parseArgs({
        args,
        options: {
          org: { type: 'string' },
          'max-calls-per-day': { type: 'string' },
          'kb-token-budget': { type: 'string' },
          'max-concurrent-calls': { type: 'string' },
          'daily-spend-cap-cents': { type: 'string' },
        },
        strict: true,
      });
      if (!values.org || !UUID_RE.test(values.org)) throw new UsageError('--org <organisation id (uuid)> is required');
      const limits = {
        max_calls_per_day: limitArg(values['max-calls-per-day'], '--max-calls-per-day'),
        kb_token_budget: limitArg(values['kb-token-budget'], '--kb-token-budget'),
        max_concurrent_calls: limitArg(values['max-concurrent-calls'], '--max-concurrent-calls'),
        daily_spend_cap_cents: limitArg(values['daily-spend-cap-cents'], '--daily-spend-cap-cents'),
      };
      if (Object.values(limits).every((v) => v === undefined)) throw new UsageError('give at least one limit to set');
      const result = await setOrgLimits(sql, values.org, limits);
      if (!result) throw new UsageError(`no organisation with id ${values.org}`);
      return result;
    },
  },
  'set-destination-limits': {
    usage: 'set-destination-limits --org <id> [--extra-countries GB,FR|none] [--unblockable-types premium_rate,satellite|none]',
    async run(sql, args) {
      const { values } = parseArgs({
        args,
        options: { org: { type: 'string' }, 'extra-countries': { type: 'string' }, 'unblockable-types': { type: 'string' } },
        strict: true,
      });
      if (!values.org || !UUID_RE.test(values.org)) throw new UsageError('--org <organisation id (uuid)> is required');
      const countries = listArg(values['extra-countries']);
      const types = listArg(values['unblockable-types']);
      if (countries === undefined && types === undefined) throw new UsageError('give --extra-countries or --unblockable-types (none clears)');
      const known = new Set<string>([...getCountries(), NON_GEOGRAPHIC]);
      const badCountry = countries?.find((c) => !known.has(c));
      if (badCountry) throw new UsageError(`--extra-countries: ${badCountry} is not an ISO 3166-1 alpha-2 code with phone numbers (or 001)`);
      const badType = types?.find((t) => !DEFAULT_BLOCKED_NUMBER_TYPES.includes(t as NumberType));
      if (badType) throw new UsageError(`--unblockable-types: ${badType} is not one of ${DEFAULT_BLOCKED_NUMBER_TYPES.join(', ')}`);
      const result = await setOrgDestinationLimits(sql, values.org, { destination_extra_countries: countries, destination_unblockable_types: types });
      if (!result) throw new UsageError(`no organisation with id ${values.org}`);
      return result;
    },
  },
};

/** A comma-separated option: absent, `none` (empty) or its distinct items, as given (countries upper-cased). */
function listArg(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  if (value.trim().toLowerCase() === 'none') return [];
  return [...new Set(value.split(',').map((v) => v.trim()).filter(Boolean).map((v) => (/^[a-z]{2}$/i.test(v) ? v.toUpperCase() : v)))];
}

export class UsageError extends Error {}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A limit option: absent, or a whole number from 0 to 2^31-1 (the column is an integer). */
function limitArg(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n > 2_147_483_647) throw new UsageError(`${flag} must be a whole number from 0 to 2147483647`);
  return n;
}

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
    (err: unknown) => {
      process.stderr.write(`admin: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
