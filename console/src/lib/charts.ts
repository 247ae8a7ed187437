/**
 * Charts, drawn by Chart.js (https://www.chartjs.org) on a <canvas>: only the parts the
 * console's pages use are registered, so the rest is left out of the bundle. Chart.js
 * writes no <style> element and no style attribute (it sizes the canvas through the
 * CSSOM), so it runs under the service's Content-Security-Policy without 'unsafe-inline'.
 * Every chart is drawn without animation (it is redrawn as data is polled, and motion
 * helps no one read a number) and comes with a table of the same numbers beside it.
 */
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, LineController, LineElement, PointElement, Tooltip } from 'chart.js';

Chart.register(BarController, BarElement, CategoryScale, Legend, LinearScale, LineController, LineElement, PointElement, Tooltip);
Chart.defaults.animation = false;
Chart.defaults.font.family = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
Chart.defaults.color = '#57606a';

export { Chart };
export type { ChartConfiguration } from 'chart.js';
