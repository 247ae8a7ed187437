/** The colour a state is drawn in (the overview's bars), apart from the chart code, which is loaded only with a chart. */
/** Colours of the states, by what they mean to the person looking: fine, on the way, needs a look, at rest. */
const STATE_COLOURS: Record<string, string> = {
  running: '#1a7f37',
  active: '#1a7f37',
  available: '#1a7f37',
  ok: '#1a7f37',
  completed: '#1a7f37',
  scheduled: '#2f81f7',
  open: '#b42318',
  failed: '#b42318',
  triggered: '#b42318',
  acknowledged: '#9a6700',
  stopped: '#8c959f',
  paused: '#8c959f',
  cancelled: '#8c959f',
  inactive: '#8c959f',
  resolved: '#8c959f',
};
const IN_PROGRESS = '#d4a72c';

export const colourOfState = (state: string): string => STATE_COLOURS[state] ?? IN_PROGRESS;
