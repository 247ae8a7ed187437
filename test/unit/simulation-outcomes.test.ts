/**
 * The simulated provider's health counts each operation's outcome once, whether its
 * resource is looked at once or at every resync, and remembers only the outcomes of the
 * health window: an install's history of operations does not stay in memory.
 */
import { Simulation } from '../../src/drivers/simulated/simulation';
import { HEALTH_WINDOW_MS } from '../../src/drivers/health';

const simulation = (failures: Record<string, number> = {}) => new Simulation({ delayMs: 1000, delays: {}, failures });

describe('Simulation outcomes', () => {
  beforeEach(() => jest.useFakeTimers({ now: Date.parse('2026-11-24T12:00:00Z') }));
  afterEach(() => jest.useRealTimers());

  it('counts a finished operation once however often it is looked at, within the window and after it', () => {
    const sim = simulation({ server: 1 });
    const op = { name: 'provision', started_at: new Date().toISOString() };
    expect(sim.progress('server', 'srv_1', op).state).toBe('pending');
    jest.advanceTimersByTime(2_000);
    const failures = () => sim.outcomesOf('server').health().recentFailures;
    for (let pass = 0; pass < 8; pass++) {
      expect(sim.progress('server', 'srv_1', op).state).toBe('failed');
      expect(failures()).toBe(1);
      jest.advanceTimersByTime(30_000); // a resync
    }
    jest.advanceTimersByTime(HEALTH_WINDOW_MS);
    expect(sim.progress('server', 'srv_1', op).state).toBe('failed');
    expect(failures()).toBe(0); // out of the window, and not counted again as new
    expect(sim.outcomesOf('server').health().state).toBe('connected');
  });

  it('does not count an outcome that ended before the window, and keeps no memory of operations past it', () => {
    const sim = simulation();
    for (let i = 0; i < 5_000; i++) sim.recordOnce('job', `team/job_${i}/x`, null, Date.now());
    jest.advanceTimersByTime(HEALTH_WINDOW_MS + 1);
    sim.recordOnce('job', 'team/late/x', 'failed', Date.now() - HEALTH_WINDOW_MS);
    expect(sim.outcomesOf('job').health().recentFailures).toBe(0);
    sim.recordOnce('job', 'team/now/x', null, Date.now());
    expect(sim.rememberedOutcomes).toBe(1);
  });
});
