/**
 * A driver's health from its recent outcomes (src/drivers/health.ts). health() keeps its
 * last answer until an outcome is recorded or the oldest one leaves the window: these
 * check that the kept answer is never one a fresh reckoning would not give.
 */
import { OutcomeWindow } from '../../src/drivers/health';

describe('OutcomeWindow', () => {
  const WINDOW_MS = 60_000;
  beforeEach(() => {
    jest.useFakeTimers();
    jest.setSystemTime(new Date('2026-01-01T00:00:00Z'));
  });
  afterEach(() => jest.useRealTimers());

  it('answers anew after every outcome', () => {
    const window = new OutcomeWindow(WINDOW_MS);
    expect(window.health()).toEqual({ state: 'connected', reachable: true, recentFailures: 0, lastFailure: null });
    window.failed('refused');
    expect(window.health()).toEqual({ state: 'degraded', reachable: true, recentFailures: 1, lastFailure: 'refused' });
    window.failed('no answer', false);
    expect(window.health()).toMatchObject({ state: 'unavailable', reachable: false, recentFailures: 2, lastFailure: 'no answer' });
    window.recovered();
    expect(window.health()).toMatchObject({ state: 'degraded', reachable: true, recentFailures: 1, lastFailure: 'refused' });
    window.succeeded();
    expect(window.health()).toMatchObject({ state: 'degraded', recentFailures: 1 });
  });

  it('lets a failure go once it leaves the window, not before', () => {
    const window = new OutcomeWindow(WINDOW_MS);
    window.failed('refused');
    jest.advanceTimersByTime(WINDOW_MS / 2);
    window.failed('refused again');
    expect(window.health()).toMatchObject({ state: 'degraded', recentFailures: 2 });
    jest.advanceTimersByTime(WINDOW_MS / 2 - 1);
    expect(window.health()).toMatchObject({ state: 'degraded', recentFailures: 2 });
    jest.advanceTimersByTime(1);
    expect(window.health()).toMatchObject({ state: 'degraded', recentFailures: 1, lastFailure: 'refused again' });
    jest.advanceTimersByTime(WINDOW_MS / 2);
    expect(window.health()).toEqual({ state: 'connected', reachable: true, recentFailures: 0, lastFailure: null });
  });

  it('answers an object its callers cannot change for the next one', () => {
    const window = new OutcomeWindow(WINDOW_MS);
    const first = window.health();
    expect(() => ((first as { state: string }).state = 'unavailable')).toThrow(TypeError);
    expect(window.health().state).toBe('connected');
  });
});
