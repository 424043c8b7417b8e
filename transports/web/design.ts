/**
 * The design system of the pages the server shows (`/app`, `/app/account`):
 * one type scale, one spacing scale, one set of colours with a dark scheme
 * that follows the system setting (`prefers-color-scheme`), and the states
 * every control shares (hover, a visible keyboard focus ring, disabled).
 * Plain CSS custom properties, no framework; each page inlines it in its one
 * style element, which its Content-Security-Policy allows by hash.
 *
 * Colours are chosen for WCAG 2.1 AA contrast in both schemes: body text and
 * muted text at least 4.5:1 on their surface, the accent button's text at
 * least 4.5:1 on the accent, the focus ring at least 3:1 against both.
 * Layout holds from 360 px phones up: one column, fluid widths, no fixed
 * heights, and the forms keep their space while data loads (no layout shift).
 */
/** Text made safe inside HTML content and quoted attributes: the five significant characters as numeric references. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export const DESIGN_CSS = `
:root{color-scheme:light dark;
--font:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;
--text-sm:.875rem;--text-md:1rem;--text-lg:1.25rem;--text-xl:1.5rem;--leading:1.5;
--s1:.25rem;--s2:.5rem;--s3:.75rem;--s4:1rem;--s5:1.5rem;--s6:2rem;
--radius:.5rem;
--bg:#f4f5f7;--surface:#ffffff;--text:#1b1e24;--muted:#4f5663;--border:#c9ced8;
--accent:#1f4fc4;--accent-hover:#173c99;--on-accent:#ffffff;
--danger:#a4211a;--on-danger:#ffffff;--ok:#17653a;--focus:#1f4fc4}
@media (prefers-color-scheme:dark){:root{
--bg:#0e1014;--surface:#181b21;--text:#e9ebef;--muted:#aab1be;--border:#3a404c;
--accent:#86a8ff;--accent-hover:#a9c1ff;--on-accent:#0b1020;
--danger:#ff9a90;--on-danger:#1a0504;--ok:#7fdc98;--focus:#a9c1ff}}
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;min-height:100vh;background:var(--bg);color:var(--text);font:var(--text-md)/var(--leading) var(--font)}
h1{font-size:var(--text-xl);line-height:1.25;margin:0 0 var(--s4)}
h2{font-size:var(--text-lg);line-height:1.3;margin:0 0 var(--s3)}
p{margin:var(--s2) 0}
a{color:var(--accent)}
a:hover{color:var(--accent-hover)}
.card{background:var(--surface);border:1px solid var(--border);border-radius:var(--radius);padding:var(--s5)}
label{display:block;margin:var(--s3) 0 var(--s1);font-weight:600;font-size:var(--text-sm)}
input:not([type=checkbox]){display:block;width:100%;min-height:2.75rem;padding:var(--s2) var(--s3);font:inherit;color:var(--text);background:var(--surface);border:1px solid var(--muted);border-radius:var(--radius)}
input[type=checkbox]{width:1.25rem;height:1.25rem;margin:0 var(--s2) 0 0;vertical-align:middle;accent-color:var(--accent)}
.check{display:flex;align-items:center;font-weight:400;font-size:var(--text-md)}
button,.button{display:inline-flex;align-items:center;justify-content:center;gap:var(--s2);min-height:2.75rem;padding:var(--s2) var(--s4);font:inherit;font-weight:600;border-radius:var(--radius);border:1px solid transparent;cursor:pointer;text-decoration:none}
button.primary,.button.primary{background:var(--accent);color:var(--on-accent);width:100%;margin-top:var(--s4)}
button.primary:hover{background:var(--accent-hover)}
button.secondary,.button.secondary{background:var(--surface);color:var(--text);border-color:var(--border)}
button.secondary:hover,.button.secondary:hover{border-color:var(--muted)}
button.danger{background:var(--danger);color:var(--on-danger)}
button.link{background:none;border:none;padding:0;min-height:2.75rem;color:var(--accent);font-weight:400;text-decoration:underline}
button:disabled{opacity:.6;cursor:default}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
input:focus-visible{outline-offset:0}
.msg{margin:var(--s2) 0 0;font-size:var(--text-sm);min-height:0}
.msg.error{color:var(--danger)}
.msg.ok{color:var(--ok)}
.muted{color:var(--muted);font-size:var(--text-sm)}
.provider{display:flex;width:100%;justify-content:flex-start;background:var(--surface);color:var(--text);border-color:var(--border);font-weight:600}
.provider:hover{border-color:var(--muted)}
.mark{display:inline-grid;place-items:center;width:1.5rem;height:1.5rem;border-radius:50%;font-size:.8rem;font-weight:700;color:#fff;flex:none}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
[hidden]{display:none!important}
@media (prefers-reduced-motion:reduce){*{transition:none!important;animation:none!important}}
`;

/**
 * Each provider's name as its brand guidelines write it, and the colour of
 * its mark (a disc with the brand's initial, drawn by the page: no image is
 * fetched from anywhere). The generic OpenID provider takes the name the
 * deployment gives it (`--oidc-display-name`, from `meta`).
 */
export const PROVIDER_BRANDS: Readonly<Record<string, { name: string; colour: string; initial: string }>> = Object.freeze({
  google: { name: 'Google', colour: '#1a73e8', initial: 'G' },
  facebook: { name: 'Facebook', colour: '#0866ff', initial: 'f' },
  github: { name: 'GitHub', colour: '#24292f', initial: 'G' },
  linkedin: { name: 'LinkedIn', colour: '#0a66c2', initial: 'in' },
  apple: { name: 'Apple', colour: '#000000', initial: 'A' },
  discord: { name: 'Discord', colour: '#4752c4', initial: 'D' },
  twitter: { name: 'X', colour: '#000000', initial: 'X' },
  microsoft: { name: 'Microsoft', colour: '#5e5e5e', initial: 'M' },
  twitch: { name: 'Twitch', colour: '#772ce8', initial: 'T' },
  roblox: { name: 'Roblox', colour: '#393b3d', initial: 'R' },
  oidc: { name: 'OpenID Connect', colour: '#1f4fc4', initial: 'ID' },
});
