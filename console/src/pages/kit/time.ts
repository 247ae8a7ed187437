/** How pages show timestamps: the user's local time, and "in 4 s" / "3 min ago" next to it. */
export function localTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function relativeTime(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '';
  const diffS = Math.round((Date.parse(iso) - now) / 1000);
  const abs = Math.abs(diffS);
  const amount =
    abs < 60 ? `${abs} s` : abs < 3600 ? `${Math.round(abs / 60)} min` : abs < 86_400 ? `${Math.round(abs / 3600)} h` : `${Math.round(abs / 86_400)} d`;
  if (abs < 1) return 'now';
  return diffS > 0 ? `in ${amount}` : `${amount} ago`;
}

/** A `datetime-local` input's value as the ISO 8601 UTC time the API takes. */
export function isoFromLocalInput(value: string): string | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}
