/** Database actions: a new administrator's password, shown once. */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { assertChangeable, envelopeOf, ErrorEnvelope, findResource, principalOf, rotateSecret, type SpecUpdate, withShownSecret } from './families';
import { databaseFamily as family, type Database } from '../../resources/database';
import type { ApiApp } from '../api-app';
import { known } from '../../lib/known';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

export function registerDatabaseRoutes(app: ApiApp, ctx: ApiContext): void {
  const passwordSecret = known(family.secret, "the administrator's password secret of a database");
  app.post(`/api/v1/${family.path}/:id/reset-password`, {
    config: { family: family.name },
    schema: {
      tags: [family.title],
      operationId: 'resetDatabasePassword',
      summary: "Reset the administrator's password",
      description:
        'Makes a new password for the administrator and answers it in `password`, once; the driver sets it on the database (`database.updated`), and the old one stops working. A deleted database answers 409 invalid_state.',
      params: IdParams,
      response: { 200: envelopeOf(withShownSecret(family)), 404: ErrorEnvelope, 409: ErrorEnvelope },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team } = principalOf(request);
      const database = await findResource<Database>(ctx, family, team, id);
      assertChangeable(family, database);
      const password = known(passwordSecret.generate?.(database.spec), "a new database password (the family's secret generates one)");
      const update: SpecUpdate<Database> = (extra = () => ({})) =>
        ctx.writer.mutateSpec<Database>(family, team, id, (current) => {
          assertChangeable(family, current);
          return { ...current.spec, ...extra(current) };
        });
      const updated = await rotateSecret(ctx, family, team, id, password, update);
      return send(ctx, request, reply, 200, { ...family.toRecord(updated), [passwordSecret.field]: password });
    },
  });
}
