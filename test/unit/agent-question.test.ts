/**
 * The agent's question parser and its "how do I" calls, without a service: the calls are
 * the CLI's own commands (same words, method and path as api/operations.ts builds), and a
 * question's entities are matched against the live state it is given.
 */
import { families } from '../../src/resources/registry';
import { allOperations } from '../../src/api/operations';
import { callsOf } from '../../src/agent/howto';
import { parseQuestion, LiveResource } from '../../src/agent/question';

const family = (name: string) => families.find((f) => f.name === name)!;

describe('agent questions', () => {
  it('names every call by the command the CLI has for it', () => {
    const commands = new Map(allOperations().map((o) => [o.command.join(' '), `${o.method} ${o.path}`]));
    for (const f of families.filter((x) => x.standardRoutes === undefined)) {
      for (const call of callsOf(f).values())
        expect([call.words.join(' '), commands.get(call.words.join(' '))]).toEqual([call.words.join(' '), `${call.method} ${call.path}`]);
    }
  });

  const server = (name: string, region: string, status: string): LiveResource => ({
    family: family('server'),
    record: { id: `svr_${name.replace(/\W/g, '').padEnd(16, '0')}`, name, region, status },
  });
  const live = {
    families: families.filter((f) => !['team', 'profile', 'thread', 'message'].includes(f.name)),
    resources: [
      server('web-1', 'fra1', 'running'),
      server('web-2', 'ams3', 'running'),
      { family: family('vpn_gateway'), record: { id: 'vpn_office0000000000000', name: 'office', region: 'fra1', status: 'active' } },
    ],
    regions: ['fra1', 'ams3'],
  };

  it('parses intent and entities against the live state', () => {
    const count = parseQuestion('How many servers are running in fra1?', live, Date.now());
    expect(count).toMatchObject({ intent: 'count', region: 'fra1', state: 'running', resources: [] });
    expect(count.families.map((f) => f.name)).toEqual(['server']);

    const status = parseQuestion('what is the status of office?', live, Date.now());
    expect(status.intent).toBe('status');
    expect(status.resources.map((r) => r.record.name)).toEqual(['office']);

    const howto = parseQuestion('how do I create a load balancer?', live, Date.now());
    expect(howto).toMatchObject({ intent: 'howto', verb: 'create' });
    expect(howto.families.map((f) => f.name)).toEqual(['load_balancer']);

    expect(parseQuestion('events in the last 2 hours', live, 10 * 3_600_000).window).toEqual({ sinceMs: 8 * 3_600_000, phrase: 'in the last 2 hours' });
    expect(parseQuestion('Hello there', live, Date.now()).intent).toBe('unknown');
    // A name that is also a word of a count does not turn the count into a status.
    expect(parseQuestion('how many web-1 servers are there?', live, Date.now())).toMatchObject({ intent: 'count', resources: [] });
    expect(parseQuestion('status of the server web-1', live, Date.now()).resources.map((r) => r.record.name)).toEqual(['web-1']);
  });
});
