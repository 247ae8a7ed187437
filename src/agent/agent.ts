/**
 * The agent: answers questions about the team's infrastructure from its real resources
 * (the store) and events (the audit log). A small set of rules recognises the questions it can
 * answer exactly; when an OpenAI-compatible LLM is configured, the facts those rules
 * gathered are handed to it as context to phrase the answer, and the rule-based answer
 * stands whenever the LLM cannot be reached.
 *
 * The endpoint is shared by every team: calls to it go through a FairGate, so a team asking
 * in many threads at once holds a few places (CLOUDPLANE_AGENT_LLM_CONCURRENCY_PER_TEAM) and
 * the teams waiting take free places in turns. A call that finds no place in time is
 * answered from the rules, as when the endpoint is down.
 */
import type { Agent, AgentDeps, EventHistory } from './types';
import type { AnyFamily, Resource } from '../resources/family';
import type { CloudEvent } from '../resources/cloud-event';
import { categoryOf } from '../events/types';
import { families } from '../resources/registry';
import { pluralOf } from '../lib/plural';
import { messageFamily, Message } from '../resources/agent';
import { incidentFamily } from '../resources/incident';
import type { AlertFeed } from './alert-feed';
import { alertLine, alertOf, isAlert } from './alerts';
import { listedObjects } from '../store/listed';
import { FairGate, GateBusyError } from '../lib/fair-gate';
import { fieldOf, recordAt, scalarText } from '../lib/unknown-values';
import { known } from '../lib/known';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The units a question may name a window in ("last 2 hours"), and what each is called in the answer. */
const UNIT_MS: Record<string, number> = { minute: 60_000, min: 60_000, hour: HOUR_MS, hr: HOUR_MS, day: DAY_MS, week: 7 * DAY_MS };
const UNIT_NAMES: Record<string, string> = { min: 'minute', hr: 'hour' };
const MAX_LINES = 50;
const RECENT_EVENT_COUNT = 10;
/** Events shown with a resource's status; "history of <id>" shows up to MAX_LINES. */
const EVENTS_WITH_STATUS = 5;
const LLM_TIMEOUT_MS = 20_000;
/** Calls of one team waiting for a place at the LLM; more are answered from the rules at once. */
const LLM_WAITING_PER_TEAM = 10;
const ID_IN_TEXT = /\b([a-z][a-z0-9]*)_([0-9a-z]{16,26})\b/g;
/** Families that are not infrastructure a user asks about in these words. */
const NOT_ASKED_ABOUT = new Set(['team', 'profile', 'thread', 'message']);
const CONVERSATION = new Set(['thread', 'message']);

interface Item {
  family: AnyFamily;
  record: Record<string, unknown>;
}

interface Window {
  sinceMs: number;
  /** "in the last hour" */
  phrase: string;
}

/** Words a user may call a family by: its title, plural, path, acronym and id prefix. */
function phrasesOf(family: AnyFamily): string[] {
  const title = family.title.toLowerCase();
  const words = title.split(/\s+/);
  const phrases = [
    title,
    pluralOf(title),
    family.plural.toLowerCase(),
    family.name.replace(/_/g, ' '),
    (family.path.split('/').at(-1) ?? family.path).replace(/-/g, ' '),
  ];
  if (words.length > 1) phrases.push(words.map((w) => w[0]).join(''), `${words.map((w) => w[0]).join('')}s`);
  if (family.idPrefix.length >= 3) phrases.push(family.idPrefix, `${family.idPrefix}s`);
  return [...new Set(phrases)];
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const hasWord = (text: string, phrase: string) => new RegExp(`\\b${escapeRegExp(phrase)}\\b`).test(text);

const nameOf = (record: Record<string, unknown>): string | null => {
  const name = record.name ?? record.title ?? record.url;
  return typeof name === 'string' ? name : null;
};
const plural = (family: AnyFamily, count: number) => (count === 1 ? family.title : pluralOf(family.title));

function describe(item: Item): string {
  const { record } = item;
  const name = nameOf(record);
  const details = [record.status, record.region, record.ipv4].filter((v) => typeof v === 'string' && v !== '');
  const statusReason = scalarText(record.status_reason);
  const reason = statusReason ? ` — ${statusReason}` : '';
  return `${String(record.id)}${name ? ` "${name}"` : ''}: ${details.join(', ')}${reason}`;
}

function bulletList(lines: string[]): string {
  const shown = lines.slice(0, MAX_LINES).map((line) => `- ${line}`);
  if (lines.length > MAX_LINES) shown.push(`- … and ${lines.length - MAX_LINES} more`);
  return shown.join('\n');
}

/** " — <why>" for an alert that says why; routine events carry no reason worth showing. */
const reasonOf = (e: CloudEvent) => {
  const reason = isAlert(e) ? scalarText(fieldOf(e.data, 'status_reason') ?? fieldOf(e.data, 'disabled_reason')) : undefined;
  return reason ? ` — ${reason}` : '';
};

/** "last hour", "past 30 minutes", "last 2 days", "today"; null when the question names none. */
function windowIn(question: string, now: number): Window | null {
  const match = /\b(?:last|past)\s+(\d+)?\s*(minute|min|hour|hr|day|week)s?\b/.exec(question);
  if (match) {
    const count = match[1] ? Number(match[1]) : 1;
    const unitMs = UNIT_MS[match[2]];
    const unit = UNIT_NAMES[match[2]] ?? match[2];
    return { sinceMs: now - count * unitMs, phrase: `in the last ${count === 1 ? unit : `${count} ${unit}s`}` };
  }
  if (/\btoday\b/.test(question)) {
    const midnight = new Date(now);
    midnight.setUTCHours(0, 0, 0, 0);
    return { sinceMs: midnight.getTime(), phrase: 'today (UTC)' };
  }
  return null;
}

export class DataAgent implements Agent {
  /** The LLM endpoint's places, shared by teams in turns; null without an endpoint. */
  readonly llmGate: FairGate | null;

  constructor(
    readonly deps: AgentDeps,
    /** The team-scoped view of the event stream every answer about events comes from. */
    private readonly audit: EventHistory,
    private readonly feed: AlertFeed,
  ) {
    const llm = deps.config.agentLlm;
    this.llmGate = llm
      ? new FairGate({ total: llm.concurrency, perTeam: llm.concurrencyPerTeam, maxWaitingPerTeam: LLM_WAITING_PER_TEAM, maxWaitMs: LLM_TIMEOUT_MS })
      : null;
  }

  /** Starts posting alerts; answering needs no start, so every replica answers. */
  start(): void {
    this.feed.start();
  }

  stop(): Promise<void> {
    this.feed.stop();
    return Promise.resolve();
  }

  async answer(team: string, threadId: string, question: string): Promise<string> {
    const facts = await this.ruleBasedAnswer(team, question);
    if (!this.llmGate) return facts;
    try {
      return await this.llmGate.run(team, () => this.askLlm(team, threadId, question, facts));
    } catch (err) {
      if (err instanceof GateBusyError)
        this.deps.logger.info({ team, reason: err.message }, "the team's places at the agent LLM are taken; answering from the rules");
      else this.deps.logger.warn({ err: String(err) }, 'agent LLM unavailable; answering from the rules');
      return facts;
    }
  }

  /** The answer from the data alone: exact, and the facts an LLM gets to work with. */
  async ruleBasedAnswer(team: string, rawQuestion: string): Promise<string> {
    const question = rawQuestion.toLowerCase();
    const words = question.replace(/[-_]/g, ' ');
    const now = Date.now();
    const mentioned = this.familiesMentioned(words);
    const ids = [...rawQuestion.matchAll(ID_IN_TEXT)].map((m) => m[0].toLowerCase());

    if (ids.length > 0) {
      const wholeHistory = /\b(history|events?|happened|timeline|log)\b/.test(question);
      return (await Promise.all(ids.map((id) => this.describeId(team, id, wholeHistory)))).join('\n\n');
    }
    if (/\bincidents?\b/.test(question)) return this.incidents(team, question);
    if (/\b(fail(ed|ures?|ing|s)?|errors?|broken|went wrong|problems?|issues?)\b/.test(question)) {
      return this.failures(team, mentioned, windowIn(question, now) ?? { sinceMs: now - HOUR_MS, phrase: 'in the last hour' });
    }
    const notState = /\b(?:not|isn'?t|aren'?t)\s+(\w+)/.exec(question);
    if (notState || /\b(down|unhealthy|not ready|degraded)\b/.test(question)) return this.notReady(team, mentioned, notState?.[1]);
    if (/\b(how many|count|number of)\b/.test(question)) return this.counts(team, mentioned);
    if (/\b(events?|happened|activity|changes|changed|what'?s new|latest)\b/.test(question)) {
      return this.recentEvents(team, mentioned, windowIn(question, now) ?? { sinceMs: now - DAY_MS, phrase: 'in the last 24 hours' });
    }
    if (mentioned.length > 0) return this.lists(team, mentioned, question);
    if (/\b(status|overview|summary|everything|all|resources|inventory)\b/.test(question)) return this.counts(team, []);
    return this.help();
  }

  private askableFamilies(): AnyFamily[] {
    return families.filter((f) => !NOT_ASKED_ABOUT.has(f.name));
  }

  /** Families named in the question; a phrase inside a longer matched one does not count. */
  private familiesMentioned(words: string): AnyFamily[] {
    const hits = this.askableFamilies().flatMap((family) =>
      phrasesOf(family)
        .filter((phrase) => hasWord(words, phrase))
        .map((phrase) => ({ family, phrase })),
    );
    const kept = hits.filter(
      (hit) => !hits.some((other) => other.phrase.length > hit.phrase.length && other.phrase.includes(hit.phrase) && other.family !== hit.family),
    );
    return [...new Set(kept.map((hit) => hit.family))];
  }

  private async itemsOf(team: string, family: AnyFamily): Promise<Item[]> {
    const resources = await this.deps.store.list<Resource['spec'], Resource['status']>(family.kind, team);
    return resources
      .map((r) => ({ family, record: family.toRecord(r) }))
      .filter((item) => item.record.status !== 'destroyed')
      .sort((a, b) => String(a.record.created_at).localeCompare(String(b.record.created_at)));
  }

  private async describeId(team: string, id: string, wholeHistory: boolean): Promise<string> {
    const prefix = id.slice(0, id.indexOf('_'));
    const family = families.find((f) => f.idPrefix === prefix);
    if (!family) return `${id} is not an id of anything I know (unknown prefix "${prefix}").`;
    const events = this.audit.search(team, { resource_id: id });
    const shown = wholeHistory ? events.slice(-MAX_LINES) : events.slice(-EVENTS_WITH_STATUS);
    const eventLines = bulletList(shown.map((e) => `${e.created_at} ${e.type}${e.actor ? ` by ${e.actor}` : ''}${reasonOf(e)}`));
    const history = `${wholeHistory ? `Its history (${shown.length === events.length ? `${events.length} events` : `the latest ${shown.length} of ${events.length} events`}, oldest first)` : 'Its latest events'}:\n${eventLines}`;
    const resource = await this.deps.store.get<Resource['spec'], Resource['status']>(family.kind, team, id);
    if (!resource || resource.status.status === 'destroyed') {
      // Gone from the store, but the audit log still remembers it for the retention period.
      if (events.length > 0) return `The ${family.title} ${id} no longer exists. ${history}`;
      return `I found no ${family.title} with id ${id} in your team.`;
    }
    const record = family.toRecord(resource);
    const name = nameOf(record);
    const lines = [`${id}${name ? ` "${name}"` : ''} is a ${family.title}; its status is ${scalarText(record.status) ?? resource.status.status}.`];
    const statusReason = scalarText(record.status_reason);
    if (statusReason) lines.push(`Reason: ${statusReason}`);
    const skip = new Set(['id', 'name', 'status', 'status_reason', 'created_at', 'updated_at', 'deleted_at']);
    const details = Object.entries(record).filter(([key, value]) => !skip.has(key) && value !== null && ['string', 'number', 'boolean'].includes(typeof value));
    if (details.length > 0) lines.push(details.map(([key, value]) => `${key}: ${String(value)}`).join(', '));
    lines.push(
      `Created ${scalarText(record.created_at) ?? resource.meta.createdAt}, last changed ${scalarText(record.updated_at) ?? resource.meta.updatedAt}.`,
    );
    if (events.length > 0) lines.push(history);
    return lines.join('\n');
  }

  private async failures(team: string, mentioned: AnyFamily[], window: Window): Promise<string> {
    const scope = mentioned.length > 0 ? mentioned : this.askableFamilies();
    const categories = new Set(scope.map((f) => f.name));
    const since = new Date(window.sinceMs).toISOString();
    const lines = new Map<string, string>();
    for (const event of this.audit.search(team, { since })) {
      const alert = alertOf(event);
      if (alert && categories.has(categoryOf(event.type))) lines.set(scalarText(fieldOf(event.data, 'id')) ?? event.id, alertLine(event, alert));
    }
    const stillFailed: Item[] = [];
    for (const family of scope) {
      for (const item of await this.itemsOf(team, family)) {
        if (item.record.status !== 'failed') continue;
        const id = String(item.record.id);
        if (String(item.record.updated_at) >= since) {
          if (!lines.has(id)) lines.set(id, `${family.title} ${describe(item)} (failed at ${String(item.record.updated_at)})`);
        } else if (!lines.has(id)) stillFailed.push(item);
      }
    }
    const earlier = stillFailed.length > 0 ? `\nStill failed from earlier:\n${bulletList(stillFailed.map((i) => `${i.family.title} ${describe(i)}`))}` : '';
    if (lines.size === 0) return `Nothing failed ${window.phrase}.${earlier}`;
    return `${lines.size} ${lines.size === 1 ? 'thing' : 'things'} failed ${window.phrase}:\n${bulletList([...lines.values()])}${earlier}`;
  }

  /** Resources not in `state` (a state of the family), or not ready when no such state is named. */
  private async notReady(team: string, mentioned: AnyFamily[], state?: string): Promise<string> {
    const scope = mentioned.length > 0 ? mentioned : this.askableFamilies();
    const parts: string[] = [];
    for (const family of scope) {
      const wanted = state && family.states.includes(state) ? [state] : family.readyStates;
      const items = (await this.itemsOf(team, family)).filter((i) => i.record.status !== 'deleted');
      const off = items.filter((i) => !wanted.includes(String(i.record.status)));
      if (mentioned.length === 0 && off.length === 0) continue;
      const label = wanted.join(' or ');
      parts.push(
        off.length === 0
          ? `All ${items.length} of your ${plural(family, 2)} are ${label}.`
          : `${off.length} of your ${items.length} ${plural(family, items.length)} ${off.length === 1 ? 'is' : 'are'} not ${label}:\n${bulletList(off.map(describe))}`,
      );
    }
    return parts.length > 0 ? parts.join('\n\n') : 'Everything you have is ready; nothing is in a state other than its normal one.';
  }

  private async counts(team: string, mentioned: AnyFamily[]): Promise<string> {
    const scope = mentioned.length > 0 ? mentioned : this.askableFamilies();
    const lines: string[] = [];
    for (const family of scope) {
      const items = await this.itemsOf(team, family);
      const live = items.filter((i) => i.record.status !== 'deleted');
      const deleted = items.length - live.length;
      if (mentioned.length === 0 && items.length === 0) continue;
      const byState = new Map<string, number>();
      for (const item of live) byState.set(String(item.record.status), (byState.get(String(item.record.status)) ?? 0) + 1);
      const breakdown = [...byState].map(([s, n]) => `${n} ${s}`).join(', ');
      lines.push(
        `You have ${live.length} ${plural(family, live.length)}${breakdown ? ` (${breakdown})` : ''}` +
          (deleted > 0 ? `, plus ${deleted} deleted and kept for the retention period` : '') +
          '.',
      );
    }
    return lines.length > 0 ? lines.join('\n') : 'You have no resources yet.';
  }

  private async lists(team: string, mentioned: AnyFamily[], question: string): Promise<string> {
    const parts: string[] = [];
    for (const family of mentioned) {
      const state = family.states.find((s) => hasWord(question, s));
      const items = (await this.itemsOf(team, family)).filter((i) => (state ? i.record.status === state : i.record.status !== 'deleted'));
      const what = `${state ? `${state} ` : ''}${plural(family, 2)}`;
      parts.push(items.length === 0 ? `You have no ${what}.` : `Your ${what} (${items.length}):\n${bulletList(items.map(describe))}`);
    }
    return parts.join('\n\n');
  }

  /** The team's incidents: open and acknowledged ones unless the question names a state; each with its status and its link. */
  private async incidents(team: string, question: string): Promise<string> {
    const family = incidentFamily;
    const named = family.states.filter((s) => hasWord(question, s));
    const wanted = named.length > 0 ? named : ['open', 'acknowledged'];
    const items = (await this.itemsOf(team, family)).filter((i) => wanted.includes(String(i.record.status)));
    const what = `${wanted.join(' or ')} incidents`;
    if (items.length === 0) return `You have no ${what}.`;
    const line = ({ record }: Item) => {
      const id = String(record.id);
      const by = scalarText(record.acknowledged_by);
      return `${id} (${String(record.status)}, opened ${String(record.opened_at)}${by ? `, acknowledged by ${by}` : ''}): ${String(record.title)} — /api/v1/${family.path}/${id}`;
    };
    return `Your ${what} (${items.length}):\n${bulletList(items.map(line))}`;
  }

  private recentEvents(team: string, mentioned: AnyFamily[], window: Window): string {
    const categories = mentioned.length > 0 ? new Set(mentioned.map((f) => f.name)) : null;
    // Without a family named, the conversation's own events (threads) would only drown the infrastructure's.
    const wanted = (e: CloudEvent) => (categories ? categories.has(categoryOf(e.type)) : !CONVERSATION.has(categoryOf(e.type)));
    const events = this.audit.search(team, { since: new Date(window.sinceMs).toISOString() }).filter(wanted);
    if (events.length === 0) return `No events ${window.phrase}.`;
    const newest = events.slice(-RECENT_EVENT_COUNT).reverse();
    const line = (e: CloudEvent) => {
      const name = nameOf(recordAt(e, 'data') ?? {});
      return `${e.created_at} ${e.type} ${scalarText(fieldOf(e.data, 'id')) ?? ''}${name ? ` "${name}"` : ''}${reasonOf(e)}`;
    };
    const shown = events.length > newest.length ? `the newest ${newest.length} of ${events.length}` : `${events.length}`;
    return `Events ${window.phrase} (${shown}, newest first):\n${bulletList(newest.map(line))}`;
  }

  private help(): string {
    const names = this.askableFamilies().map((f) => pluralOf(f.title));
    return [
      "I answer from your team's resources and events. You can ask me, for example:",
      '- "Which load balancers are not running?"',
      '- "Status of lb_…" (any resource id), or "history of lb_…" for all its events',
      '- "What failed in the last hour?"',
      '- "How many servers do I have?"',
      '- "List my VPN gateways"',
      '- "Recent events" (or "events in the last 2 days")',
      `I know about: ${names.join(', ')}.`,
    ].join('\n');
  }

  /** Asks an OpenAI-compatible chat completion to phrase the answer from the gathered facts. */
  private async askLlm(team: string, threadId: string, question: string, facts: string): Promise<string> {
    const llm = known(this.deps.config.agentLlm, 'the LLM settings (askLlm runs only when they are set)');
    const inventory = await this.counts(team, []);
    const history = await this.history(team, threadId);
    const url = llm.url.replace(/\/+$/, '').endsWith('/chat/completions') ? llm.url : `${llm.url.replace(/\/+$/, '')}/chat/completions`;
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(llm.apiKey ? { authorization: `Bearer ${llm.apiKey}` } : {}) },
      signal: AbortSignal.timeout(LLM_TIMEOUT_MS),
      body: JSON.stringify({
        model: llm.model,
        temperature: 0,
        messages: [
          {
            role: 'system',
            content:
              "You are the assistant of a cloud control plane. Answer the user's question using only the facts given; " +
              'quote resource ids exactly; say so when the facts do not answer it.\n\n' +
              `Inventory:\n${inventory}\n\nFacts for this question:\n${facts}`,
          },
          ...history,
          { role: 'user', content: question },
        ],
      }),
    });
    if (!response.ok) throw new Error(`LLM answered HTTP ${response.status}`);
    const body = (await response.json()) as { choices?: Array<{ message?: { content?: string } }> };
    const content = body.choices?.[0]?.message?.content?.trim();
    if (!content) throw new Error('LLM answer without content');
    return content;
  }

  /** The thread so far (without the question being answered), for the LLM's context. */
  private async history(team: string, threadId: string): Promise<Array<{ role: 'user' | 'assistant'; content: string }>> {
    // The thread's messages alone, oldest first, from the thread_id index.
    const messages: Array<{ role: 'user' | 'assistant'; content: string }> = [];
    for await (const m of listedObjects<Message['spec'], Message['status']>(this.deps.store, messageFamily.kind, team, { where: { thread_id: threadId } })) {
      const { role, content } = m.spec;
      if (role !== 'event') messages.push({ role, content });
    }
    return messages.slice(-11, -1);
  }
}
