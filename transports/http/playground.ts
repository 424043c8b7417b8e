/**
 * A minimal, self-contained GraphQL playground (no external assets): a query
 * editor, a variables editor and the response, posting to `/graphql` with the
 * page's own origin and cookies. Served at `GET /playground` while
 * `--enable-playground` is true.
 */
export const PLAYGROUND_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Latchkey GraphQL playground</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 0; display: grid; grid-template-columns: 1fr 1fr; grid-template-rows: auto 1fr 9em; height: 100vh; }
  header { grid-column: 1 / 3; padding: .5em 1em; background: #1f2937; color: #fff; display: flex; gap: 1em; align-items: center; }
  textarea, pre { font: 13px ui-monospace, monospace; margin: 0; padding: .75em; border: 0; border-right: 1px solid #ddd; resize: none; }
  #query { grid-row: 2; } #variables { grid-row: 3; border-top: 1px solid #ddd; }
  pre { grid-column: 2; grid-row: 2 / 4; overflow: auto; background: #f9fafb; }
  button { font: inherit; padding: .3em 1em; }
</style>
</head>
<body>
<header><strong>Latchkey</strong> GraphQL playground <button id="run">Run (Ctrl+Enter)</button></header>
<textarea id="query" spellcheck="false">query {
  meta {
    version
    client_id
    is_sign_up_enabled
  }
}</textarea>
<textarea id="variables" spellcheck="false" placeholder="variables (JSON)"></textarea>
<pre id="out"></pre>
<script>
  const $ = (id) => document.getElementById(id);
  async function run() {
    let variables;
    try { variables = $('variables').value.trim() ? JSON.parse($('variables').value) : undefined; }
    catch (e) { $('out').textContent = 'variables: ' + e.message; return; }
    const res = await fetch('/graphql', { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: $('query').value, variables }) });
    $('out').textContent = JSON.stringify(await res.json(), null, 2);
  }
  $('run').onclick = run;
  document.addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) run(); });
</script>
</body>
</html>
`;
