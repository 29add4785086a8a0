// GET /sdk/vap-widget.js and /sdk/vap.mjs: the built web SDK and drop-in widget (web/dist), so that a
// customer's page can load them from the API's own origin, which is then the widget's default API base.
// Public files: any origin may load them (the ES module needs CORS to be imported from another origin).
import { defineRoute, reply } from '../../http/route.ts';
import { notFound } from '../../http/errors.ts';
import { readBuilt } from '../playground/assets.ts';

const FILES: Record<string, string> = { 'vap-widget.js': 'vap-widget.js', 'vap.mjs': 'vap.mjs' };

export const webSdkRoutes = [
  defineRoute({
    method: 'get',
    path: '/sdk/:file',
    root: true,
    auth: 'none',
    internal: true,
    operationId: 'webSdkFile',
    tag: 'health',
    summary: 'The web SDK (vap.mjs) and drop-in widget (vap-widget.js)',
    responses: { 200: { description: 'JavaScript' } },
    handler: async ({ ctx, services }) => {
      const name = String((ctx.params as Record<string, string>).file);
      const file = Object.hasOwn(FILES, name) ? FILES[name]! : null;
      const bytes = file ? await readBuilt(file, services.config.WEB_DIST_DIR) : null;
      if (!file || !bytes) throw notFound('SDK file');
      return reply(200, bytes, {
        'content-type': 'text/javascript; charset=utf-8',
        'access-control-allow-origin': '*',
        'cross-origin-resource-policy': 'cross-origin',
        'x-content-type-options': 'nosniff',
        // Short: a deployment's new build reaches pages within minutes.
        'cache-control': 'public, max-age=300',
      });
    },
  }),
];
