// Every route of the control plane. Each resource folder exports its routes; order only affects the docs.
import type { RouteDef } from '../http/route.ts';
import { healthRoutes } from './health/routes.ts';
import { apiKeyRoutes } from './api-keys/routes.ts';
import { auditEventRoutes } from './audit-events/routes.ts';
import { credentialRoutes } from './credentials/routes.ts';
import { publishableKeyRoutes } from './publishable-keys/routes.ts';
import { workspaceRoutes } from './workspace/routes.ts';
import { modelRoutes } from './models/routes.ts';
import { toolRoutes } from './tools/routes.ts';

export const resourceRoutes: RouteDef[] = [...healthRoutes, ...apiKeyRoutes, ...auditEventRoutes, ...credentialRoutes, ...publishableKeyRoutes, ...workspaceRoutes, ...modelRoutes, ...toolRoutes];
