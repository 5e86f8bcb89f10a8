/** The four API families (spec section 1), each a root path with its own organization list and scopes. */
export const FAMILIES = ['books', 'inventory', 'invoice', 'billing'] as const;
export type Family = (typeof FAMILIES)[number];
