/** How the status page writes values: escaped text, grouped counts, ages and times. */

export const esc = (v: string | number | null | undefined): string =>
  String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const GROUPED = new Intl.NumberFormat('en-US');

/**
 * A count, grouped ("12,345"), with its value for the page's script, which groups it again in
 * the reader's locale ("12.345", "12 345"): the server does not know the reader's locale.
 */
export const count = (v: number): string => `<data value="${v}">${GROUPED.format(v)}</data>`;

/** "3 min", "2 h", "5 d". */
export function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** "12 min ago" (or "in 5 min"), with the instant in `datetime`; the page's script puts the local time on hover. */
export function timeTag(iso: string, now: number): string {
  const at = Date.parse(iso);
  const text = at > now + 1000 ? `in ${age(at - now)}` : `${age(now - at)} ago`;
  return `<time datetime="${esc(new Date(at).toISOString())}">${text}</time>`;
}
