// Database handle types. They live here, below http/ and jobs/, so that every layer can name them
// without importing the HTTP route definitions.
import type { Sql, TransactionSql } from 'postgres';

/** Either the pool or the request's transaction; both take tagged templates. */
export type Db = Sql | TransactionSql;
