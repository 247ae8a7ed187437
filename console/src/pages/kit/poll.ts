/**
 * Live status without reloading: calls `refresh` every `intervalMs` while the tab is
 * visible (and once more when it becomes visible again). Returns the stop function, so a
 * page writes `$effect(() => every(3000, load))` and polling ends with the page.
 */
export function every(intervalMs: number, refresh: () => unknown): () => void {
  let running = false;
  const tick = async () => {
    if (running || document.visibilityState === 'hidden') return;
    running = true;
    try {
      await refresh();
    } catch {
      // The page shows its own errors; a failed poll is tried again at the next tick.
    } finally {
      running = false;
    }
  };
  const timer = setInterval(tick, intervalMs);
  const onVisible = () => {
    if (document.visibilityState === 'visible') void tick();
  };
  document.addEventListener('visibilitychange', onVisible);
  return () => {
    clearInterval(timer);
    document.removeEventListener('visibilitychange', onVisible);
  };
}
