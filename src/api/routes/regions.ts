/** GET /api/v1/regions: the region catalog. */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { envelopeOf } from './families';
import { regionCatalog } from '../../resources/regions';
import type { ApiApp } from '../api-app';

const RegionRecord = Type.Object({
  id: Type.String({ description: 'Region id, used as `region` in requests.' }),
  name: Type.String({ description: 'Human-readable name.' }),
  available: Type.Boolean({ description: 'Whether new resources can be created there.' }),
});

export function registerRegionRoutes(app: ApiApp, ctx: ApiContext): void {
  app.get('/api/v1/regions', {
    schema: { tags: ['regions'], operationId: 'listRegions', summary: 'List regions', response: { 200: envelopeOf(Type.Array(RegionRecord)) } },
    handler: async (request, reply) => send(ctx, request, reply, 200, regionCatalog(ctx.config)),
  });
}
