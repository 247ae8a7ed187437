/**
 * Agent families: a thread of conversation with the agent, and its messages. Both are
 * served by routes of their own (src/api/routes/agent.ts). Messages emit no events: a
 * thread's conversation is not infrastructure, and the agent reads events itself.
 */
import { Type } from '@sinclair/typebox';
import type { BaseStatus, FamilyDefinition, Resource } from './family';
import type { FamilyCommand } from './commands';
import { asStored } from './family';
import { baseStatusProperties, IdOf, NullableTimestamp, strictObject, Timestamp } from './schema-kit';

const THREAD_STATES = ['active'] as const;
const MESSAGE_STATES = ['stored'] as const;
export const MESSAGE_ROLES = ['user', 'assistant', 'event'] as const;
export type MessageRole = (typeof MESSAGE_ROLES)[number];

export const DEFAULT_THREAD_TITLE = 'New thread';

const Title = Type.String({ minLength: 1, maxLength: 200, description: 'Title of the thread, 1-200 characters; default "New thread".' });
const Question = Type.String({ minLength: 1, maxLength: 10_000, description: 'The question or message to the agent, 1-10000 characters.' });
// Stored messages may be longer than a question: an answer can list many resources.
const Content = Type.String({ minLength: 1, maxLength: 100_000, description: 'Text of the message.' });
const Role = Type.String({ enum: [...MESSAGE_ROLES], description: 'Who wrote it: user (the caller), assistant (the agent) or event (a notice of an event).' });
const MessageCount = Type.Integer({ minimum: 0, description: 'Number of messages in the thread.' });
const LastMessageAt = NullableTimestamp('Time of the newest message; null while the thread is empty.');

export interface ThreadSpec {
  title: string;
}
export interface ThreadStatus extends BaseStatus {
  message_count: number;
  last_message_at: string | null;
}
export type Thread = Resource<ThreadSpec, ThreadStatus>;

export interface MessageSpec {
  thread_id: string;
  role: MessageRole;
  content: string;
}
export type Message = Resource<MessageSpec>;

/** The body of a question to the agent (POST /api/v1/agent/threads/{id}/messages). */
export const MessageCreate = strictObject({ content: Question });

/** A thread's messages, read and asked (api/routes/agent.ts). */
const THREAD_COMMANDS: readonly FamilyCommand[] = [
  {
    words: ['read'],
    summary: 'Read the messages of a thread, oldest first',
    method: 'GET',
    path: '/{thread_id}/messages',
    query: Type.Object({
      cursor: Type.Optional(Type.String({ description: 'Pagination cursor from the previous page.' })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Results per page, 1-100, default 50.' })),
      role: Type.Optional(Type.String({ enum: [...MESSAGE_ROLES], description: 'Only messages of this role.' })),
      sort: Type.Optional(Type.String({ enum: ['created_at'], description: 'Sort field: created_at.' })),
      order: Type.Optional(Type.String({ enum: ['asc', 'desc'], description: 'Default asc (oldest first).' })),
    }),
    paged: true,
    answers: 'message',
  },
  { words: ['message'], summary: 'Get one message of a thread', method: 'GET', path: '/{thread_id}/messages/{message_id}', answers: 'message' },
  {
    words: ['ask'],
    summary: 'Ask the agent a question; prints the question and the answer',
    method: 'POST',
    path: '/{thread_id}/messages',
    body: MessageCreate,
    bodyArgument: { field: 'content', label: 'question' },
    answers: 'message',
  },
];

export const threadFamily: FamilyDefinition<ThreadSpec, ThreadStatus> = {
  name: 'thread',
  quota: { default: 10_000 },
  title: 'agent thread',
  kind: 'AgentThread',
  plural: 'agentthreads',
  shortNames: ['cpthread'],
  path: 'agent/threads',
  idPrefix: 'thr',
  states: THREAD_STATES,
  readyStates: ['active'],
  providerBacked: false,
  deletion: 'immediate',
  creationEvent: 'created',
  standardRoutes: false,
  deletable: false,
  description: "A conversation with the agent, which answers questions from the team's resources and events.",
  schemas: {
    create: strictObject({ title: Type.Optional(Title) }),
    spec: strictObject({ title: Title }),
    status: strictObject({ ...baseStatusProperties(THREAD_STATES), message_count: MessageCount, last_message_at: LastMessageAt }),
    record: strictObject({
      id: IdOf('thr', 'Thread id, prefix thr.'),
      title: Title,
      message_count: MessageCount,
      last_message_at: LastMessageAt,
      created_at: Timestamp('Creation time, ISO 8601 UTC.'),
      updated_at: Timestamp('Time of the last change (a new message), ISO 8601 UTC.'),
    }),
  },
  specFromCreate: (body: Partial<ThreadSpec>) => ({ title: body.title ?? DEFAULT_THREAD_TITLE }),
  initialStatus: () => ({ message_count: 0, last_message_at: null }),
  nameOf: (spec) => spec.title,
  commands: THREAD_COMMANDS,
  toRecord: (thread) => {
    const status = asStored(thread.status);
    return {
      id: thread.meta.id,
      title: thread.spec.title,
      message_count: status.message_count ?? 0,
      last_message_at: status.last_message_at ?? null,
      created_at: thread.meta.createdAt,
      // A thread changes only by new messages; the outbox relay's own writes are no change of it.
      updated_at: status.last_message_at ?? thread.meta.createdAt,
    };
  },
  presentation: {
    columns: [
      { key: 'id', label: 'ID' },
      { key: 'title', label: 'Title' },
      { key: 'message_count', label: 'Messages' },
      { key: 'last_message_at', label: 'Last message at' },
    ],
  },
};

export const messageFamily: FamilyDefinition<MessageSpec> = {
  name: 'message',
  quota: { default: 100_000 },
  title: 'agent message',
  kind: 'AgentMessage',
  plural: 'agentmessages',
  shortNames: ['cpmsg'],
  path: 'agent/threads/{id}/messages',
  idPrefix: 'msg',
  states: MESSAGE_STATES,
  readyStates: ['stored'],
  providerBacked: false,
  deletion: 'immediate',
  // No creation event and no state events: messages are never on the bus.
  creationEvent: null,
  eventStates: [],
  standardRoutes: false,
  deletable: false,
  description: 'A message of an agent thread: a question of the user, an answer of the agent, or an event notice.',
  schemas: {
    create: MessageCreate,
    spec: strictObject({ thread_id: IdOf('thr', 'The thread the message belongs to.'), role: Role, content: Content }),
    status: strictObject(baseStatusProperties(MESSAGE_STATES)),
    record: strictObject({
      id: IdOf('msg', 'Message id, prefix msg.'),
      thread_id: IdOf('thr', 'The thread the message belongs to.'),
      role: Role,
      content: Content,
      created_at: Timestamp('When the message was written, ISO 8601 UTC.'),
    }),
  },
  // The thread and the role are the route's to add to the question's body (api/routes/agent.ts).
  specFromCreate: (body: MessageSpec) => ({ thread_id: body.thread_id, role: body.role, content: body.content }),
  initialStatus: () => ({}),
  nameOf: (spec) => spec.role,
  listing: { hiddenStates: [], filterFields: ['thread_id', 'role'] },
  toRecord: (message) => ({
    id: message.meta.id,
    thread_id: message.spec.thread_id,
    role: message.spec.role,
    content: message.spec.content,
    created_at: message.meta.createdAt,
  }),
  presentation: {
    columns: [
      { key: 'id', label: 'ID' },
      { key: 'role', label: 'Role' },
      { key: 'created_at', label: 'Created at' },
      { key: 'content', label: 'Content' },
    ],
  },
};
