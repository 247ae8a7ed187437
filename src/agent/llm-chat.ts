/**
 * A conversation with an OpenAI-compatible chat completion endpoint (`POST …/chat/completions`)
 * in which the model may call the agent's tools: the API's reads, made as the person who
 * asked (AgentTools). The model answers from what they return, so an answer about the
 * team's infrastructure rests on the live state, not on what the model remembers.
 *
 * Everything is bounded: the rounds of tool calls, the calls of a round, the text of a
 * result handed back, and the time of the whole conversation. An answer the endpoint sends
 * in another shape is refused (the caller then answers from the rules).
 */
import { Type, Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { AgentTools } from './types';
import { isRecord } from '../lib/unknown-values';

/** Rounds in which the model may call tools; the last round offers none, so it must answer. */
export const MAX_TOOL_ROUNDS = 4;
/** Calls taken from one answer of the model; the rest are told that they were not made. */
export const MAX_CALLS_PER_ROUND = 8;
/** Characters of a tool's result handed to the model (a list of 50 large records is cut). */
export const MAX_RESULT_CHARS = 16_000;

export interface LlmSettings {
  url: string;
  model: string;
  apiKey?: string;
}

const ToolCall = Type.Object({
  id: Type.String(),
  type: Type.Optional(Type.Literal('function')),
  function: Type.Object({ name: Type.String(), arguments: Type.String() }),
});
type ToolCall = Static<typeof ToolCall>;

/** What this module reads of a completion: the first choice's message. */
const Completion = Type.Object({
  choices: Type.Array(
    Type.Object({
      message: Type.Object({
        content: Type.Optional(Type.Union([Type.String(), Type.Null()])),
        tool_calls: Type.Optional(Type.Union([Type.Array(ToolCall), Type.Null()])),
      }),
    }),
    { minItems: 1 },
  ),
});

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

const endpointOf = (url: string) => {
  const base = url.replace(/\/+$/, '');
  return base.endsWith('/chat/completions') ? base : `${base}/chat/completions`;
};

/** The tools as the endpoint's `tools` parameter. */
const offered = (tools: AgentTools) => tools.list.map((tool) => ({ type: 'function', function: tool }));

async function complete(settings: LlmSettings, messages: ChatMessage[], tools: AgentTools | undefined, signal: AbortSignal) {
  const response = await fetch(endpointOf(settings.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}) },
    signal,
    body: JSON.stringify({ model: settings.model, temperature: 0, messages, ...(tools && tools.list.length > 0 ? { tools: offered(tools) } : {}) }),
  });
  if (!response.ok) throw new Error(`LLM answered HTTP ${response.status}`);
  const body: unknown = await response.json();
  if (!Value.Check(Completion, body)) throw new Error('LLM answer in an unknown shape');
  return body.choices[0].message;
}

const cut = (text: string) => (text.length <= MAX_RESULT_CHARS ? text : `${text.slice(0, MAX_RESULT_CHARS)}… (cut: ${text.length} characters in all)`);

/** One tool call's result for the model: the API's answer, or why it was not made. */
async function resultOf(tools: AgentTools, call: ToolCall): Promise<string> {
  let args: unknown;
  try {
    args = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
  } catch {
    return `Not called: the arguments of ${call.function.name} are not JSON.`;
  }
  if (!isRecord(args)) return `Not called: the arguments of ${call.function.name} must be a JSON object.`;
  return cut(await tools.call(call.function.name, args));
}

/**
 * The model's answer to `messages`, after it called what it needed of `tools` (none when
 * undefined). Fails when the endpoint fails, answers without content, or `timeoutMs` passes.
 */
export async function chat(settings: LlmSettings, messages: ChatMessage[], tools: AgentTools | undefined, timeoutMs: number): Promise<string> {
  const signal = AbortSignal.timeout(timeoutMs);
  const conversation = [...messages];
  for (let round = 0; ; round += 1) {
    const offer = round < MAX_TOOL_ROUNDS ? tools : undefined;
    const message = await complete(settings, conversation, offer, signal);
    const calls = message.tool_calls ?? [];
    if (calls.length === 0 || !offer) {
      const content = message.content?.trim();
      if (!content) throw new Error(calls.length > 0 ? 'LLM kept calling tools after its last round' : 'LLM answer without content');
      return content;
    }
    conversation.push({ role: 'assistant', content: message.content ?? null, tool_calls: calls });
    for (const [index, call] of calls.entries()) {
      const content = index < MAX_CALLS_PER_ROUND ? await resultOf(offer, call) : `Not called: at most ${MAX_CALLS_PER_ROUND} calls are made of one answer.`;
      conversation.push({ role: 'tool', tool_call_id: call.id, content });
    }
  }
}
