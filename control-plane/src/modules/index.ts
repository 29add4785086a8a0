// Every route of the control plane. Each resource folder exports its routes; order only affects the docs.
import type { RouteDef } from '../http/route.ts';
import { healthRoutes } from './health/routes.ts';
import { apiKeyRoutes } from './api-keys/routes.ts';
import { auditEventRoutes } from './audit-events/routes.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { credentialRoutes } from './credentials/routes.ts';
import { publishableKeyRoutes } from './publishable-keys/routes.ts';
import { workspaceRoutes } from './workspace/routes.ts';
import { modelRoutes } from './models/routes.ts';
import { toolRoutes } from './tools/routes.ts';
import { callRoutes } from './calls/routes.ts';
import { internalCallRoutes } from './calls/internal-routes.ts';
import { setupFailureRoutes } from './calls/setup-failure.ts';
import { internalTransferRoutes } from './calls/transfer-routes.ts';
import { supervisionRoutes } from './calls/supervision-routes.ts';
import { usageRoutes } from './usage/routes.ts';
import { agentRoutes } from './agents/routes.ts';
import { agentVersionRoutes } from './agent-versions/routes.ts';
import { voiceRoutes } from './voices/routes.ts';
import { internalInboundRoutes, phoneNumberRoutes } from './phone-numbers/routes.ts';
// Knowledge bases
import { knowledgeBaseRoutes } from './knowledge-bases/routes.ts';
// activity
import { activityRoutes } from './activity/routes.ts';
import { workerRoutes } from './workers/routes.ts';
import { standbyRoutes } from './standby/routes.ts';
import { callRecordingRoutes } from './calls/recording-routes.ts';
import { playgroundRoutes } from './playground/routes.ts';
import { webSdkRoutes } from './web-sdk/routes.ts';
import { agentTestRoutes } from './agent-tests/routes.ts';
import { campaignRoutes } from './campaigns/routes.ts';
import { squadRoutes } from './squads/routes.ts';
import { doNotCallRoutes, internalDoNotCallRoutes } from './do-not-call/routes.ts';

export const resourceRoutes: RouteDef[] = [...healthRoutes, ...apiKeyRoutes, ...auditEventRoutes, ...webhookRoutes, ...credentialRoutes, ...publishableKeyRoutes, ...workspaceRoutes, ...modelRoutes, ...toolRoutes, ...callRoutes, ...supervisionRoutes, ...campaignRoutes, ...doNotCallRoutes, ...internalDoNotCallRoutes, ...usageRoutes, ...internalCallRoutes, ...setupFailureRoutes, ...internalTransferRoutes, ...agentRoutes, ...agentVersionRoutes, ...squadRoutes, ...agentTestRoutes, ...voiceRoutes, ...activityRoutes, ...workerRoutes, ...standbyRoutes, ...callRecordingRoutes, ...knowledgeBaseRoutes, ...phoneNumberRoutes, ...internalInboundRoutes, ...playgroundRoutes, ...webSdkRoutes];
