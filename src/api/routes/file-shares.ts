/**
 * File share actions: attach a share to a server, and detach it. The attachment is the
 * server's (its spec lists its file shares, so a kubectl edit of that list works the
 * same): the server's reconciler resolves each share to what its driver mounts, at
 * /mnt/file-storage/<file_share_id>. The answer is the server, its `mounts` changed, in
 * the state the change began (the Pod driver replaces the server's Pod: `rebooting`).
 */
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { writeAndAwait } from '../awaiting';
import { assertChangeable, envelopeOf, ErrorEnvelope, findResource, principalOf } from './families';
import { fileShareFamily, FileShare } from '../../resources/storage';
import { attachedShares, Server, serverFamily } from '../../resources/server';
import { conflict, fieldInvalid, invalidState, resourceBusy } from '../../lib/errors';
import type { ApiApp } from '../api-app';
import { recordOf } from '../../resources/record-of';
import { DryRunQuery, previewSpecChange, sendDryRun } from '../dry-run';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const ServerBody = (description: string) =>
  Type.Object({ server_id: Type.String({ minLength: 1, maxLength: 64, description }) }, { additionalProperties: false });
const responses = { 200: envelopeOf(serverFamily.schemas.record), 404: ErrorEnvelope, 409: ErrorEnvelope, 422: ErrorEnvelope };

interface Action {
  name: 'attach' | 'detach';
  summary: string;
  body: ReturnType<typeof ServerBody>;
  /** Refuses the action on this share and server; checked again on the latest server as it is written. */
  check(share: FileShare, server: Server): void;
  /** The server's file shares after the action. */
  shares(current: string[], shareId: string): string[];
}

/** A share can be attached once it is available, and never once deleted. */
function assertAttachable(share: FileShare): void {
  const state = share.status.status;
  if (state === 'deleted' || share.meta.deletionTimestamp) throw invalidState('The file share is deleted.');
  if (state === 'creating') throw resourceBusy('The file share is still being created; try again when it is available.');
  if (state !== 'available') throw invalidState(`Cannot attach a file share that is ${state}; it must be available.`);
}

const ACTIONS: Action[] = [
  {
    name: 'attach',
    summary: 'Attach a file share to a server (mounted at /mnt/file-storage/<id>)',
    body: ServerBody("The server to mount the share on (prefix svr), in the share's region."),
    check(share, server) {
      assertAttachable(share);
      assertChangeable(serverFamily, server);
      if (server.spec.region !== share.spec.region) {
        throw fieldInvalid('server_id', `is in region ${server.spec.region}; the file share is in ${share.spec.region}, and mounts only in its own region`);
      }
      if (attachedShares(server.spec).includes(share.meta.id)) {
        throw conflict('backend_already_attached', `File share ${share.meta.id} is already attached to server ${server.meta.id}.`);
      }
    },
    shares: (current, shareId) => [...current, shareId],
  },
  {
    name: 'detach',
    summary: 'Detach a file share from a server',
    body: ServerBody('The server the share is attached to.'),
    check(share, server) {
      assertChangeable(serverFamily, server);
      if (!attachedShares(server.spec).includes(share.meta.id)) {
        throw invalidState(`File share ${share.meta.id} is not attached to server ${server.meta.id}.`);
      }
    },
    shares: (current, shareId) => current.filter((id) => id !== shareId),
  },
];

export function registerFileShareRoutes(app: ApiApp, ctx: ApiContext): void {
  for (const action of ACTIONS) {
    app.post(`/api/v1/${fileShareFamily.path}/:id/${action.name}`, {
      // What the answer shows, and what does the work, is the server.
      config: { family: serverFamily.name },
      schema: {
        tags: [fileShareFamily.title],
        operationId: `${action.name}FileShare`,
        summary: action.summary,
        params: IdParams,
        querystring: DryRunQuery,
        body: action.body,
        response: responses,
      },
      handler: async (request, reply) => {
        const { id } = request.params;
        const { server_id } = request.body;
        const { team, key } = principalOf(request);
        const share = await findResource<FileShare>(ctx, fileShareFamily, team, id);
        const found = await findResource<Server>(ctx, serverFamily, team, server_id);
        action.check(share, found);
        const change = (server: Server) => {
          action.check(share, server);
          return { ...server.spec, file_shares: action.shares(attachedShares(server.spec), id) };
        };
        // The server's spec as the write would leave it; what its driver then does (a Pod replaced) is not foretold.
        if (request.query.dry_run === true) return sendDryRun(ctx, request, reply, serverFamily, previewSpecChange(found, change));
        let asked = found;
        const write = async () => {
          asked = await ctx.writer.mutateSpec<Server>(serverFamily, team, server_id, change, key);
        };
        // Begun (the Pod driver replaces the Pod: rebooting), or already done (this generation observed).
        const begun = (server: Server) => server.status.status !== found.status.status || server.status.observed_generation >= asked.meta.generation;
        const moved = await writeAndAwait<Server>(ctx.store, serverFamily.kind, team, server_id, write, (server) => asked !== found && begun(server));
        return send(ctx, request, reply, 200, recordOf(serverFamily, moved ?? asked));
      },
    });
  }
}
