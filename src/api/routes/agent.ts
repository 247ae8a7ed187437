/**
 * The agent: threads of conversation, and their messages. Posting a message stores the
 * question, asks the agent, and stores its answer; both come back in one 201.
 */
import type { FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { ApiContext } from '../context';
import { send } from '../envelope';
import { listPage, listQueryOf, listQuerySchema, pagingParameters } from '../list';
import { envelopeOf, ErrorEnvelope, findResource, principalOf } from './families';
import { messageFamily, MessageCreate, MESSAGE_ROLES, Message, MessageRole, Thread, threadFamily } from '../../resources/agent';
import { notFound } from '../../lib/errors';
import { KeyedMutex } from '../../lib/mutex';
import { sleep } from '../../lib/time';
import { newId } from '../../lib/ids';
import { withinQuota } from '../../resources/quota';
import type { ApiApp } from '../api-app';
import { ruleContextOf } from '../../events/catalog';
import { asStored } from '../../resources/family';
import { recordOf } from '../../resources/record-of';

const tags = ['agent'];
const ThreadParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'Thread id.' }) });
const MessageParams = Type.Object({
  id: Type.String({ maxLength: 64, description: 'Thread id.' }),
  message_id: Type.String({ maxLength: 64, description: 'Message id.' }),
});
const errors = { 401: ErrorEnvelope, 404: ErrorEnvelope, 415: ErrorEnvelope, 422: ErrorEnvelope, 429: ErrorEnvelope, 503: ErrorEnvelope };

/** Messages are listed oldest first by default, the order a conversation is read in. */
const MessageListQuery = Type.Object(
  {
    cursor: pagingParameters.cursor(),
    limit: pagingParameters.limit(),
    role: Type.Optional(Type.String({ enum: [...MESSAGE_ROLES], description: 'Only messages of this role.' })),
    sort: pagingParameters.sort(['created_at'], 'Sort field: created_at (the only one; messages have no name).'),
    order: pagingParameters.order('Sort direction, default asc (oldest first), unlike other lists.'),
  },
  { additionalProperties: false },
);

// One exchange at a time per thread, so questions and answers interleave in order.
const threadLock = new KeyedMutex();

export function registerAgentRoutes(app: ApiApp, ctx: ApiContext): void {
  const base = `/api/v1/${threadFamily.path}`;
  const ThreadRecord = threadFamily.schemas.record;
  const MessageRecord = messageFamily.schemas.record;

  app.get(base, {
    schema: {
      tags,
      operationId: 'listAgentThreads',
      summary: 'List agent threads',
      description: "The team's threads; `sort=name` orders by title. Default order: newest first.",
      querystring: listQuerySchema(threadFamily.states),
      response: { 200: envelopeOf(Type.Array(ThreadRecord)), ...errors },
    },
    handler: async (request, reply) => {
      const query = listQueryOf(request);
      const { page, nextCursor } = await listPage(ctx.store, threadFamily, principalOf(request).team, query, ctx.cursorKey);
      return send(
        ctx,
        request,
        reply,
        200,
        page.map((t) => recordOf(threadFamily, t)),
        { next_cursor: nextCursor },
      );
    },
  });

  app.post(base, {
    schema: {
      tags,
      operationId: 'createAgentThread',
      summary: 'Start an agent thread',
      description: 'The body is optional; without a `title` the thread is called "New thread".',
      body: threadFamily.schemas.create,
      response: { 201: envelopeOf(ThreadRecord), ...errors },
    },
    // The body is optional: a request without one is an empty object, every field defaulted.
    preValidation: (request, _reply, done) => {
      // Typed as the schema says, but absent until this hook runs.
      const sent: unknown = request.body;
      if (sent === undefined || sent === null) request.body = {};
      done();
    },
    handler: async (request, reply) => {
      const { team, key } = principalOf(request);
      const spec = threadFamily.specFromCreate(request.body, ruleContextOf(ctx.config));
      const id = newId(threadFamily.idPrefix);
      const thread = (await withinQuota(ctx.quota, threadFamily, team, id, () => ctx.writer.create(threadFamily, team, spec, key, id))) as Thread;
      reply.header('Location', `${base}/${thread.meta.id}`);
      return send(ctx, request, reply, 201, recordOf(threadFamily, thread));
    },
  });

  app.get(`${base}/:id`, {
    schema: {
      tags,
      operationId: 'getAgentThread',
      summary: 'Get an agent thread',
      params: ThreadParams,
      response: { 200: envelopeOf(ThreadRecord), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const thread = await findResource<Thread>(ctx, threadFamily, principalOf(request).team, id);
      return send(ctx, request, reply, 200, recordOf(threadFamily, thread));
    },
  });

  app.get(`${base}/:id/messages`, {
    schema: {
      tags,
      operationId: 'listAgentThreadMessages',
      summary: 'List the messages of a thread',
      description: 'Oldest first by default (order=asc), the order a conversation is read in; order=desc for newest first. `role` filters by author.',
      params: ThreadParams,
      querystring: MessageListQuery,
      response: { 200: envelopeOf(Type.Array(MessageRecord)), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { team } = principalOf(request);
      await findResource(ctx, threadFamily, team, id);
      // The cursor is bound to the role filter like to any filter (scopeOf).
      const { role } = request.query;
      const where: Record<string, string> = role ? { thread_id: id, role } : { thread_id: id };
      const { page, nextCursor } = await listPage(ctx.store, messageFamily, team, listQueryOf(request, { order: 'asc' }), ctx.cursorKey, {
        where,
      });
      return send(
        ctx,
        request,
        reply,
        200,
        page.map((m) => recordOf(messageFamily, m)),
        { next_cursor: nextCursor },
      );
    },
  });

  app.get(`${base}/:id/messages/:message_id`, {
    schema: {
      tags,
      operationId: 'getAgentThreadMessage',
      summary: 'Get a message of a thread',
      params: MessageParams,
      response: { 200: envelopeOf(MessageRecord), ...errors },
    },
    handler: async (request, reply) => {
      const { id, message_id } = request.params;
      const { team } = principalOf(request);
      await findResource(ctx, threadFamily, team, id);
      const message = await ctx.store.get<Message['spec'], Message['status']>(messageFamily.kind, team, message_id);
      if (!message || message.spec.thread_id !== id) throw notFound('message', message_id);
      return send(ctx, request, reply, 200, recordOf(messageFamily, message));
    },
  });

  app.post(`${base}/:id/messages`, {
    schema: {
      tags,
      operationId: 'askAgent',
      summary: "Ask the agent: answers 201 with data = [the user message, the agent's answer]",
      description:
        "Stores `content` as a user message, has the agent answer it from the team's resources and events, and stores the answer as an assistant message. " +
        'The response is 201 with `data` an array of the two messages, question first; `Location` names the user message.',
      params: ThreadParams,
      body: MessageCreate,
      response: { 201: envelopeOf(Type.Array(MessageRecord)), ...errors },
    },
    handler: async (request, reply) => {
      const { id } = request.params;
      const { content } = request.body;
      const { team, key } = principalOf(request);
      await findResource(ctx, threadFamily, team, id);
      // The question and the answer both count toward the team's message quota: room for both, or neither is written.
      const ids: [string, string] = [newId(messageFamily.idPrefix), newId(messageFamily.idPrefix)];
      const [question, answer] = await threadLock.run(`${team}/${id}`, () =>
        withinQuota(ctx.quota, messageFamily, team, ids, () => exchange(ctx, request, team, key, id, content, ids)),
      );
      reply.header('Location', `${base}/${id}/messages/${question.meta.id}`);
      return send(ctx, request, reply, 201, [recordOf(messageFamily, question), recordOf(messageFamily, answer)]);
    },
  });
}

async function exchange(
  ctx: ApiContext,
  request: FastifyRequest,
  team: string,
  key: string,
  threadId: string,
  content: string,
  [questionId, answerId]: [string, string],
): Promise<[Message, Message]> {
  const write = (role: MessageRole, text: string, id: string) => ctx.writer.create(messageFamily, team, { thread_id: threadId, role, content: text }, key, id);
  const question = await write('user', content, questionId);
  let text: string;
  try {
    text = await ctx.agent.answer(team, threadId, content, request.agentTools);
  } catch (err) {
    request.log.error({ err }, 'the agent failed to answer');
    text = 'Sorry, I could not work out an answer just now. Please ask again in a moment.';
  }
  // The answer must sort after the question: a later millisecond, as ids break ties at random.
  while (Date.now() <= Date.parse(question.meta.createdAt)) await sleep(1);
  const answer = await write('assistant', text, answerId);
  await ctx.writer.mutateStatus<Thread>(
    threadFamily,
    team,
    threadId,
    (thread) => ({ message_count: (asStored(thread.status).message_count ?? 0) + 2, last_message_at: answer.meta.createdAt }),
    key,
  );
  return [question, answer];
}
