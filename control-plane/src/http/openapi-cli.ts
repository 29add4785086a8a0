// `npm run openapi`: prints the OpenAPI document (no database needed).
import { allRoutes } from '../app.ts';
import { buildOpenApi } from './openapi.ts';

process.stdout.write(JSON.stringify(buildOpenApi(allRoutes()), null, 2) + '\n');
