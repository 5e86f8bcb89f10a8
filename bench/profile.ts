/**
 * Summarizes a V8 .cpuprofile (from `node --cpu-prof`): self time per function and per module.
 */
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMs: number;
  top: Array<{ name: string; where: string; selfMs: number; pct: number }>;
  byModule: Array<{ module: string; selfMs: number; pct: number }>;
  /** svcsync's own functions (dist/src) by inclusive time: what a call costs with everything under it. */
  inclusive: Array<{ name: string; where: string; totalMs: number; pct: number }>;
  file?: string;
}

function where(frame: CallFrame, root: string): string {
  if (!frame.url) return '(native)';
  let path = frame.url;
  if (path.startsWith('file://')) {
    try {
      path = relative(root, fileURLToPath(path));
    } catch {
      /* keep the URL */
    }
  }
  return `${path}:${frame.lineNumber + 1}`;
}

/** A coarse owner: a package in node_modules, a svcsync source file, Node's internals, or V8. */
function moduleOf(frame: CallFrame, root: string): string {
  const url = frame.url;
  if (!url) {
    const n = frame.functionName;
    if (n === '(garbage collector)' || n === '(program)' || n === '(idle)' || n === '(root)') return n;
    return '(native / V8 builtins)';
  }
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return `npm: ${nm[1]}`;
  if (url.startsWith('node:')) return 'node: internals';
  const w = where(frame, root);
  return w.replace(/:\d+$/, '');
}

export function summarizeProfile(profile: CpuProfile, rootDir: string, limit = 25): ProfileSummary {
  const byId = new Map<number, ProfileNode>(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    // timeDeltas[i] is the time since the previous sample: charge the interval that follows a
    // sample to it (the next delta), the usual convention of Chrome's profiler.
    const dt = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
  }
  let totalUs = 0;
  const fn = new Map<string, { name: string; where: string; us: number }>();
  const mod = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const f = node.callFrame;
    if (f.functionName === '(idle)') continue;
    totalUs += us;
    const w = where(f, rootDir);
    const key = `${f.functionName}@${w}`;
    const entry = fn.get(key) ?? { name: f.functionName || '(anonymous)', where: w, us: 0 };
    entry.us += us;
    fn.set(key, entry);
    const m = moduleOf(f, rootDir);
    mod.set(m, (mod.get(m) ?? 0) + us);
  }
  const pct = (us: number): number => (totalUs ? (100 * us) / totalUs : 0);

  // Inclusive time: a node's self time plus its subtree's, charged once per function even
  // when the function recurses (a key already on the stack is not charged again).
  const subtree = new Map<number, number>();
  const total = (id: number): number => {
    const known = subtree.get(id);
    if (known !== undefined) return known;
    const node = byId.get(id);
    let t = node && node.callFrame.functionName !== '(idle)' ? (selfUs.get(id) ?? 0) : 0;
    for (const c of node?.children ?? []) t += total(c);
    subtree.set(id, t);
    return t;
  };
  const inclusive = new Map<string, { name: string; where: string; us: number }>();
  const onStack = new Map<string, number>();
  const root = profile.nodes[0];
  const visit = (id: number): void => {
    const node = byId.get(id);
    if (!node) return;
    const f = node.callFrame;
    const own = f.url.includes('/dist/src/');
    const key = `${f.functionName}@${f.url}:${f.lineNumber}`;
    const depth = onStack.get(key) ?? 0;
    if (own && depth === 0) {
      const entry = inclusive.get(key) ?? { name: f.functionName || '(anonymous)', where: where(f, rootDir), us: 0 };
      entry.us += total(id);
      inclusive.set(key, entry);
    }
    onStack.set(key, depth + 1);
    for (const c of node.children ?? []) visit(c);
    onStack.set(key, depth);
  };
  if (root) visit(root.id);
  return {
    totalMs: totalUs / 1000,
    top: [...fn.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, limit)
      .map((e) => ({ name: e.name, where: e.where, selfMs: e.us / 1000, pct: pct(e.us) })),
    byModule: [...mod.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([module, us]) => ({ module, selfMs: us / 1000, pct: pct(us) })),
    inclusive: [...inclusive.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, limit)
      .map((e) => ({ name: e.name, where: e.where, totalMs: e.us / 1000, pct: pct(e.us) })),
  };
}
