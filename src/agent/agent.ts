/**
 * The agent: answers questions about the team's infrastructure from its real resources
 * (the store) and events (the audit log). A parser and a small set of rules recognise the
 * questions they can answer exactly; when an OpenAI-compatible LLM is configured, the facts
 * those rules gathered are handed to it as a start, with the API's reads as tools it may
 * call as the asker (llm-chat.ts), and the rule-based answer stands whenever the LLM cannot
 * be reached.
 *
 * The endpoint is shared by every team: calls to it go through a FairGate, so a team asking
 * in many threads at once holds a few places (CLOUDPLANE_AGENT_LLM_CONCURRENCY_PER_TEAM) and
 * the teams waiting take free places in turns. A call that finds no place in time is
 * answered from the rules, as when the endpoint is down.
 */
import type { Agent, AgentDeps, AgentTools, EventHistory } from './types';
import { chat } from './llm-chat';
import type { AnyFamily, Resource } from '../resources/family';
import type { CloudEvent } from '../resources/cloud-event';
import { categoryOf } from '../events/types';
import { families } from '../resources/registry';
import { pluralOf } from '../lib/plural';
import { messageFamily, Message } from '../resources/agent';
import { incidentFamily } from '../resources/incident';
import type { AlertFeed } from './alert-feed';
import { alertLine, alertOf, alertTypesOf, isAlert } from './alerts';
import { listedObjects } from '../store/listed';
import { FairGate, GateBusyError } from '../lib/fair-gate';
import { fieldOf, recordAt, scalarText } from '../lib/unknown-values';
import { known } from '../lib/known';
import { hasWord, LiveResource, nameOf, parseQuestion, Question, Window } from './question';
import { howTo, noSuchCall } from './howto';
import { recordOf } from '../resources/record-of';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const MAX_LINES = 50;
const RECENT_EVENT_COUNT = 10;
/**
 * Events looked at for the newest outside the conversation: a question asked in a thread
 * full of messages still finds the infrastructure's, and no question reads a whole history.
 */
const RECENT_SCAN_LIMIT = 1_000;
/** Events shown with a resource's status; "history of <id>" shows up to MAX_LINES. */
const EVENTS_WITH_STATUS = 5;
/** The whole of an LLM answer, its rounds of tool calls included. */
const LLM_TIMEOUT_MS = 30_000;
/** Calls of one team waiting for a place at the LLM; more are answered from the rules at once. */
const LLM_WAITING_PER_TEAM = 10;
/** Families that are not infrastructure a user asks about in these words. */
const NOT_ASKED_ABOUT = new Set(['team', 'profile', 'thread', 'message']);
const CONVERSATION = new Set(['thread', 'message']);

type Item = LiveResource;

/** Oldest first, as the audit log orders events: by time, then id. */
const byTime = (a: CloudEvent, b: CloudEvent) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The items in the region, when one is named. */
const inRegion = (items: Item[], region?: string) => (region ? items.filter((i) => i.record.region === region) : items);
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

  async answer(team: string, threadId: string, question: string, tools?: AgentTools): Promise<string> {
    const facts = await this.ruleBasedAnswer(team, question);
    if (!this.llmGate) return facts;
    try {
      return await this.llmGate.run(team, () => this.askLlm(team, threadId, question, facts, tools));
    } catch (err) {
      if (err instanceof GateBusyError)
        this.deps.logger.info({ team, reason: err.message }, "the team's places at the agent LLM are taken; answering from the rules");
      else this.deps.logger.warn({ err: String(err) }, 'agent LLM unavailable; answering from the rules');
      return facts;
    }
  }

  /** The answer from the data alone: exact, and the facts an LLM gets to work with. */
  async ruleBasedAnswer(team: string, rawQuestion: string): Promise<string> {
    const now = Date.now();
    const askable = this.askableFamilies();
    const resources = (await Promise.all(askable.map((f) => this.itemsOf(team, f)))).flat();
    const regions = [...new Set([...this.deps.config.regions, ...resources.map((r) => r.record.region).filter((r): r is string => typeof r === 'string')])];
    const question = parseQuestion(rawQuestion, { families: askable, resources, regions }, now);
    return this.answerTo(team, question, rawQuestion.toLowerCase(), now);
  }

  private async answerTo(team: string, q: Question, text: string, now: number): Promise<string> {
    const filter = { state: q.state, region: q.region };
    switch (q.intent) {
      case 'howto':
        return this.howTo(q);
      case 'status':
      case 'history': {
        if (q.unmatchedName) return this.nothingNamed(q.unmatchedName);
        const ids = [...new Set([...q.resources.map((r) => String(r.record.id)), ...q.ids])];
        return (await Promise.all(ids.map((id) => this.describeId(team, id, q.intent === 'history')))).join('\n\n');
      }
      case 'incidents':
        return this.incidents(team, text);
      case 'failures':
        return this.failures(team, q.families, q.window ?? { sinceMs: now - HOUR_MS, phrase: 'in the last hour' });
      case 'not_ready':
        return this.notReady(team, q.families, q.negated ? q.state : undefined, q.region);
      case 'count':
        return this.counts(team, q.families, filter);
      case 'events':
        return this.recentEvents(team, q.families, q.window ?? { sinceMs: now - DAY_MS, phrase: 'in the last 24 hours' });
      case 'list':
        return this.lists(team, q.families, filter);
      case 'overview':
        return this.counts(team, []);
      case 'unknown':
        return this.help(true);
    }
  }

  /** "How do I <verb> a <family>?", from the OpenAPI document the service serves. */
  private howTo(q: Question): string {
    const verb = q.verb ?? 'create';
    const family = q.families[0] as AnyFamily | undefined;
    if (!family) {
      return (
        `I understood a "how do I ${verb} …" question but not what it is about. Name the kind of resource, for example ` +
        `"how do I ${verb} a load balancer?". I know about: ${this.askableFamilies()
          .map((f) => pluralOf(f.title))
          .join(', ')}.`
      );
    }
    const document = this.deps.apiDocument?.();
    if (!document) return 'The OpenAPI document is not available yet; it is served at /api/v1/openapi.json.';
    return howTo(document, family, verb, this.deps.config.regions) ?? noSuchCall(family, verb);
  }

  private nothingNamed(name: string): string {
    return (
      `I found nothing named "${name}" in your team (I look for a resource by its exact name or id). ` +
      'Ask "list my <kind>" (servers, load balancers, VPN gateways, …) to see the names, or give the id.'
    );
  }

  private askableFamilies(): AnyFamily[] {
    return families.filter((f) => !NOT_ASKED_ABOUT.has(f.name));
  }

  private async itemsOf(team: string, family: AnyFamily): Promise<Item[]> {
    const resources = await this.deps.store.list<Resource['spec'], Resource['status']>(family.kind, team);
    return resources
      .map((r) => ({ family, record: recordOf(family, r) }))
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
    const record = recordOf(family, resource);
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
    // Each alert type's own index of the audit log: a busy team's routine events are not read.
    const alerts = [...categories].flatMap((category) => alertTypesOf(category).flatMap((type) => this.audit.search(team, { type, since })));
    for (const event of alerts.sort(byTime)) {
      const alert = alertOf(event);
      if (alert) lines.set(scalarText(fieldOf(event.data, 'id')) ?? event.id, alertLine(event, alert));
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

  /** Resources not in `state` (a state of the family), or not ready when no such state is named; in `region` when one is named. */
  private async notReady(team: string, mentioned: AnyFamily[], state?: string, region?: string): Promise<string> {
    const scope = mentioned.length > 0 ? mentioned : this.askableFamilies();
    const where = region ? ` in ${region}` : '';
    const parts: string[] = [];
    for (const family of scope) {
      const wanted = state && family.states.includes(state) ? [state] : family.readyStates;
      const items = inRegion(await this.itemsOf(team, family), region).filter((i) => i.record.status !== 'deleted');
      const off = items.filter((i) => !wanted.includes(String(i.record.status)));
      if (mentioned.length === 0 && off.length === 0) continue;
      const label = wanted.join(' or ');
      parts.push(
        off.length === 0
          ? `All ${items.length} of your ${plural(family, 2)}${where} are ${label}.`
          : `${off.length} of your ${items.length} ${plural(family, items.length)}${where} ${off.length === 1 ? 'is' : 'are'} not ${label}:\n${bulletList(off.map(describe))}`,
      );
    }
    return parts.length > 0 ? parts.join('\n\n') : `Everything you have${where} is ready; nothing is in a state other than its normal one.`;
  }

  /**
   * How many of each family (all families the team has, when none is named): by state, or
   * exactly those in the state and region the question names, each listed.
   */
  private async counts(team: string, mentioned: AnyFamily[], filter: { state?: string; region?: string } = {}): Promise<string> {
    const scope = mentioned.length > 0 ? mentioned : this.askableFamilies();
    const where = filter.region ? ` in ${filter.region}` : '';
    const lines: string[] = [];
    for (const family of scope) {
      const items = inRegion(await this.itemsOf(team, family), filter.region);
      if (filter.state) {
        const { state } = filter;
        const matching = items.filter((i) => i.record.status === state);
        if (mentioned.length === 0 && matching.length === 0) continue;
        lines.push(
          `You have ${matching.length} ${state} ${plural(family, matching.length)}${where}${matching.length > 0 ? `:\n${bulletList(matching.map(describe))}` : '.'}`,
        );
        continue;
      }
      const live = items.filter((i) => i.record.status !== 'deleted');
      const deleted = items.length - live.length;
      if (mentioned.length === 0 && items.length === 0) continue;
      const byState = new Map<string, number>();
      for (const item of live) byState.set(String(item.record.status), (byState.get(String(item.record.status)) ?? 0) + 1);
      const breakdown = [...byState].map(([s, n]) => `${n} ${s}`).join(', ');
      lines.push(
        `You have ${live.length} ${plural(family, live.length)}${where}${breakdown ? ` (${breakdown})` : ''}` +
          (deleted > 0 ? `, plus ${deleted} deleted and kept for the retention period` : '') +
          '.',
      );
    }
    if (lines.length > 0) return lines.join('\n');
    return filter.state || filter.region ? `You have nothing ${filter.state ?? ''}${where}.`.replace('  ', ' ') : 'You have no resources yet.';
  }

  /** The named families' resources (or, with a state or region but no family, every family's that has any), filtered by state and region. */
  private async lists(team: string, mentioned: AnyFamily[], filter: { state?: string; region?: string }): Promise<string> {
    const scope = mentioned.length > 0 ? mentioned : this.askableFamilies();
    const where = filter.region ? ` in ${filter.region}` : '';
    const parts: string[] = [];
    for (const family of scope) {
      const state = filter.state && family.states.includes(filter.state) ? filter.state : undefined;
      if (mentioned.length === 0 && filter.state && !state) continue;
      const items = inRegion(await this.itemsOf(team, family), filter.region).filter((i) =>
        state ? i.record.status === state : i.record.status !== 'deleted',
      );
      if (mentioned.length === 0 && items.length === 0) continue;
      const what = `${state ? `${state} ` : ''}${plural(family, 2)}${where}`;
      parts.push(items.length === 0 ? `You have no ${what}.` : `Your ${what} (${items.length}):\n${bulletList(items.map(describe))}`);
    }
    return parts.length > 0 ? parts.join('\n\n') : `You have nothing ${filter.state ?? ''}${where}.`.replace('  ', ' ');
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
    const since = new Date(window.sinceMs).toISOString();
    const everything = () => true;
    // A family named: the newest of each family's own index. None: the newest of all, but the
    // conversation's own events (threads), which would only drown the infrastructure's.
    const events =
      mentioned.length > 0
        ? mentioned
            .flatMap((family) => this.audit.newest(team, { type: `${family.name}.*`, since }, RECENT_EVENT_COUNT, everything, RECENT_EVENT_COUNT))
            .sort((a, b) => byTime(b, a))
            .slice(0, RECENT_EVENT_COUNT)
        : this.audit.newest(team, { since }, RECENT_EVENT_COUNT, (e) => !CONVERSATION.has(categoryOf(e.type)), RECENT_SCAN_LIMIT);
    if (events.length === 0) return `No events ${window.phrase}.`;
    const line = (e: CloudEvent) => {
      const name = nameOf(recordAt(e, 'data') ?? {});
      return `${e.created_at} ${e.type} ${scalarText(fieldOf(e.data, 'id')) ?? ''}${name ? ` "${name}"` : ''}${reasonOf(e)}`;
    };
    const shown = events.length === RECENT_EVENT_COUNT ? `the newest ${events.length}` : `${events.length}`;
    return `Events ${window.phrase} (${shown}, newest first):\n${bulletList(events.map(line))}`;
  }

  /** What the agent can answer; first, when the question was not understood, that it was not, and why. */
  private help(notUnderstood = false): string {
    const names = this.askableFamilies().map((f) => pluralOf(f.title));
    return [
      ...(notUnderstood
        ? [
            'I could not understand that question.' +
              (this.deps.config.agentLlm
                ? ''
                : ' Without an LLM I match its words: kinds of resources, names and ids, regions, states and time windows ("last hour"); ' +
                  'set CLOUDPLANE_AGENT_LLM_URL (an OpenAI-compatible endpoint, with CLOUDPLANE_AGENT_LLM_MODEL and CLOUDPLANE_AGENT_LLM_API_KEY) to have a model answer too.'),
          ]
        : []),
      "I answer from your team's resources and events. You can ask me, for example:",
      '- "How many servers are running in fra1?"',
      '- "Which load balancers are not running?"',
      '- "What is the status of web-1?" (a name or any resource id), or "history of lb_…" for all its events',
      '- "What failed in the last hour?"',
      '- "List my VPN gateways"',
      '- "Recent events" (or "events in the last 2 days")',
      '- "How do I create a load balancer?" (the API call and the CLI command)',
      `I know about: ${names.join(', ')}.`,
    ].join('\n');
  }

  /**
   * Asks an OpenAI-compatible chat completion, with the facts the rules gathered as a start
   * and the API's reads as tools over the team's live state (llm-chat.ts).
   */
  private async askLlm(team: string, threadId: string, question: string, facts: string, tools: AgentTools | undefined): Promise<string> {
    const llm = known(this.deps.config.agentLlm, 'the LLM settings (askLlm runs only when they are set)');
    const inventory = await this.counts(team, []);
    const history = await this.history(team, threadId);
    const system =
      "You are the assistant of a cloud control plane. Answer the user's question from the facts given" +
      (tools ? " and from what the tools (the API's reads over the team's live state) return; call them for anything the facts do not settle" : ' only') +
      '. Quote resource ids and names exactly; say so when you cannot find the answer.\n\n' +
      `Inventory:\n${inventory}\n\nFacts for this question:\n${facts}`;
    return chat(llm, [{ role: 'system', content: system }, ...history, { role: 'user', content: question }], tools, LLM_TIMEOUT_MS);
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
