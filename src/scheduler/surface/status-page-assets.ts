import { readFileSync } from 'node:fs';

/**
 * The status page's style and script (status-page.ts renders the rest), kept as real files in
 * status-page/ beside this module and inlined into the page, so that it needs nothing from
 * elsewhere. No framework: the script filters the list, draws the fleet's heat map and budget bars
 * on one canvas (17,000 cells at 1,000 organizations cost a few milliseconds there, and no DOM),
 * loads an organization's streams from `/status.json` when it is opened, shows local times on
 * hover, and reloads every minute keeping the filter, the open organizations and the scroll
 * position. The build copies the folder into dist/ (scripts/copy-assets.mjs).
 */
export interface PageAssets {
  style: string;
  script: string;
}

let loaded: PageAssets | undefined;

/** Read on the first page rendered, not when the module loads: a CLI command that shows no page never needs them. */
export function pageAssets(): PageAssets {
  loaded ??= { style: inlinable('status-page.css', 'style'), script: inlinable('status-page.js', 'script') };
  return loaded;
}

/** A file's text, which must not close the element it is inlined into. */
function inlinable(name: string, element: string): string {
  const text = readFileSync(new URL(`./status-page/${name}`, import.meta.url), 'utf8');
  if (text.toLowerCase().includes(`</${element}`)) throw new Error(`status-page/${name} contains </${element}, which would end it early`);
  return text;
}
