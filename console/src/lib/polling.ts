/**
 * Live status by polling: runs `load` now and every `intervalMs` while the page is visible,
 * at once again when it becomes visible, and never two at a time. Returns the stop function
 * (for an $effect's cleanup).
 */
export function poll(load: () => Promise<void>, intervalMs = 2500): () => void {
  let stopped = false;
  let running = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const tick = async () => {
    clearTimeout(timer);
    if (stopped) return;
    if (document.visibilityState === 'visible' && !running) {
      running = true;
      try {
        await load();
      } finally {
        running = false;
      }
    }
    if (!stopped) timer = setTimeout(tick, intervalMs);
  };
  const onVisibility = () => {
    if (document.visibilityState === 'visible') void tick();
  };
  document.addEventListener('visibilitychange', onVisibility);
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisibility);
  };
}
