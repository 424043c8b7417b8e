/**
 * The GraphQL playground at `GET /playground` (while `--enable-playground`):
 * GraphiQL against this server's `/graphql`, with its query, variables and
 * headers editors, its documentation explorer (from introspection, when
 * `--enable-graphql-introspection`) and its history.
 *
 * GraphiQL's browser build and React's come from the installed `graphiql`,
 * `react` and `react-dom` packages and are served from `/playground/` itself:
 * the page loads nothing from another origin. Its policy: scripts and styles
 * from the server only (GraphiQL's editor sets element styles, hence
 * `style-src 'unsafe-inline'`), requests to the server only, no framing. The
 * requests are same-origin POSTs with the page's cookies, so the browser
 * sends `Origin` and the CSRF check passes; an admin operation needs the
 * admin cookie or the admin header in the headers editor.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/** The files under `/playground/`: name → the installed file and its media type. */
const ASSET_FILES: Record<string, { pkg: string; file: string; type: string }> = {
  'react.js': { pkg: 'react', file: 'umd/react.production.min.js', type: 'text/javascript' },
  'react-dom.js': { pkg: 'react-dom', file: 'umd/react-dom.production.min.js', type: 'text/javascript' },
  'graphiql.js': { pkg: 'graphiql', file: 'graphiql.min.js', type: 'text/javascript' },
  'graphiql.css': { pkg: 'graphiql', file: 'graphiql.min.css', type: 'text/css' },
};

/** A file of an installed package, found from its package.json (the browser builds are outside the packages' exports maps). */
const fileOf = (pkg: string, file: string): string => join(dirname(require.resolve(`${pkg}/package.json`)), file);

/** The page's own script: GraphiQL on `/graphql`, same origin, with cookies. */
const START_JS = `'use strict';
const fetcher = GraphiQL.createFetcher({ url: new URL('/graphql', location.href).href, fetch: (url, init) => fetch(url, { ...init, credentials: 'same-origin' }) });
const defaultQuery = '# Latchkey: GraphQL over this server. Admin operations (prefixed _) need the admin cookie\\n# (admin_login) or {"x-service-admin-secret": "..."} in the headers below.\\nquery {\\n  meta {\\n    version\\n    client_id\\n    is_sign_up_enabled\\n  }\\n}\\n';
ReactDOM.createRoot(document.getElementById('graphiql')).render(React.createElement(GraphiQL, { fetcher, defaultQuery, isHeadersEditorEnabled: true, shouldPersistHeaders: false }));
// Accessibility (WCAG 2.1 AA) of the editors GraphiQL renders: names for their text areas, and
// keyboard access to their scrolling regions, set as they appear.
const NAMES = [['.graphiql-query-editor', 'Query'], ['.graphiql-editor-tool', 'Variables or headers'], ['.result-window', 'Response']];
const label = () => {
  for (const [scope, name] of NAMES) {
    for (const area of document.querySelectorAll(scope + ' textarea:not([aria-label])')) area.setAttribute('aria-label', name);
  }
  for (const region of document.querySelectorAll('.CodeMirror-scroll')) if (region.getAttribute('tabindex') !== '0') region.setAttribute('tabindex', '0');
};
new MutationObserver(label).observe(document.body, { childList: true, subtree: true });
label();
`;

/** Darker editor colours than GraphiQL's own, for a contrast of at least 4.5:1 on its light background (WCAG 1.4.3). */
const CONTRAST_CSS = `.graphiql-container .cm-property, .graphiql-container .cm-attribute, .graphiql-container .cm-qualifier { color: #1d4e89; }
.graphiql-container .cm-def, .graphiql-container .cm-variable, .graphiql-container .cm-builtin { color: #6b2c91; }
.graphiql-container .cm-string, .graphiql-container .cm-string-2 { color: #8a3b00; }
.graphiql-container .cm-number, .graphiql-container .cm-atom { color: #1f6b2a; }
.graphiql-container .cm-keyword, .graphiql-container .cm-punctuation, .graphiql-container .CodeMirror-linenumber { color: #3d3d3d; }
.graphiql-container .cm-comment { color: #555555; }
.graphiql-container a, .graphiql-container a:visited { color: #1d4e89 !important; }
`;

export const PLAYGROUND_HTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Latchkey GraphQL playground</title>
<link rel="stylesheet" href="/playground/graphiql.css">
<link rel="stylesheet" href="/playground/contrast.css">
<style>html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
<div id="graphiql" role="main">Loading the playground…</div>
<script src="/playground/react.js"></script>
<script src="/playground/react-dom.js"></script>
<script src="/playground/graphiql.js"></script>
<script src="/playground/start.js"></script>
</body>
</html>
`;

export const PLAYGROUND_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

/**
 * The playground's files, read from the installed packages on the first
 * request for one of them (GraphiQL's and React's builds are several
 * megabytes, held only once the playground is used): path under
 * `/playground/` → body and media type. The packages are located at once, so
 * a missing one stops the server at startup rather than serving a broken page.
 */
export function playgroundAssets(): (name: string) => { body: string; type: string } | undefined {
  const paths = Object.entries(ASSET_FILES).map(([name, a]) => [name, fileOf(a.pkg, a.file), a.type] as const);
  let loaded: Map<string, { body: string; type: string }> | undefined;
  return (name) => {
    if (loaded === undefined) {
      loaded = new Map();
      for (const [n, path, type] of paths) loaded.set(n, { body: readFileSync(path, 'utf8'), type });
      loaded.set('start.js', { body: START_JS, type: 'text/javascript' });
      loaded.set('contrast.css', { body: CONTRAST_CSS, type: 'text/css' });
    }
    return loaded.get(name);
  };
}
