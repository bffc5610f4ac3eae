import { OUTCOME_STYLES } from './outcome.js';

// One colour per outcome, used by bars, swatches and result text alike, from OUTCOME_STYLES.
const outcomeRules = OUTCOME_STYLES.map(
  ({ outcome, color }) =>
    `.bar[data-outcome="${outcome}"],.swatch[data-outcome="${outcome}"]{background:${color}}` +
    `.res[data-outcome="${outcome}"]{--tone:${color}}` +
    `.tl.hide-${outcome} .bar[data-outcome="${outcome}"]{opacity:.08;pointer-events:none}`,
).join('\n');

/** The page's whole stylesheet: system fonts only (the page loads nothing), light and quiet. */
export const REPORT_CSS = `
:root{--fg:#17202c;--muted:#5f6b7a;--faint:#8a94a3;--border:#e3e7ed;--line:#eef1f4;--bg:#f5f6f8;--card:#fff;
--good:#21875a;--bad:#c7353c;--warn:#b8690f;--mono:ui-monospace,"SFMono-Regular",Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue","Liberation Sans",Arial,sans-serif;font-variant-numeric:tabular-nums}
main{max-width:1200px;margin:0 auto;padding:32px 28px 40px}
code{font-family:var(--mono);font-size:.86em}
h1,h2{margin:0;font-weight:650;letter-spacing:-.01em}
h1{font-size:26px;line-height:1.25;overflow-wrap:anywhere}
h2{font-size:16px}
.page-head{margin-bottom:22px}
.eyebrow,.hero-label,.stat-label,.fhead{font-size:11.5px;font-weight:650;text-transform:uppercase;letter-spacing:.07em;color:var(--muted)}
.meta{margin:4px 0 0;color:var(--muted);font-size:13.5px;overflow-wrap:anywhere}
.meta b{color:var(--fg);font-weight:600}
.card{background:var(--card);border:1px solid var(--border);border-radius:12px;padding:18px 22px;box-shadow:0 1px 2px rgba(16,24,40,.04)}
.headline{display:grid;grid-template-columns:minmax(200px,1fr) minmax(200px,1fr) minmax(320px,1.7fr);gap:16px;margin-bottom:16px}
.hero-value{font-size:46px;font-weight:700;line-height:1.1;margin:6px 0 10px;letter-spacing:-.02em}
.hero-none{color:var(--faint)}
.hero-sub{color:var(--muted);font-size:13.5px}
.hero-sub [data-metric]{color:var(--fg);font-weight:600}
.hero-note{color:var(--faint);font-size:12px;margin-top:6px}
.meter{height:8px;border-radius:4px;background:var(--line);overflow:hidden;margin:0 0 10px}
.meter span{display:block;height:100%;border-radius:4px;background:var(--good)}
#coverage[data-full="false"] .meter span{background:#e0a030}
.validity{border-left-width:6px}
.validity[data-valid="true"]{border-left-color:var(--good)}
.validity[data-valid="true"] .verdict{color:var(--good)}
.validity[data-valid="false"]{border-left-color:var(--bad);background:linear-gradient(#fff,#fff8f8)}
.validity[data-valid="false"] .verdict{color:var(--bad)}
.reasons{margin:0;padding-left:18px;font-size:13.5px;color:#3a2326}
.reasons li{margin:3px 0;overflow-wrap:anywhere}
.stats{display:grid;grid-template-columns:repeat(auto-fit,minmax(170px,1fr));gap:12px;margin-bottom:16px}
.stat{background:var(--card);border:1px solid var(--border);border-radius:10px;padding:12px 16px}
.stat-value{font-size:26px;font-weight:680;line-height:1.2;margin:2px 0}
.stat-sub{font-size:12.5px;color:var(--muted)}
.stat-sub [data-metric]{color:var(--fg);font-weight:600}
.stat[data-tone="bad"] .stat-value{color:var(--bad)}
.stat[data-tone="warn"] .stat-value{color:var(--warn)}
section.card{margin-bottom:16px}
.section-head{display:flex;flex-wrap:wrap;align-items:center;justify-content:space-between;gap:10px 16px;margin-bottom:12px}
.legend{display:flex;flex-wrap:wrap;gap:6px}
.legend-item{display:inline-flex;align-items:center;gap:6px;font:inherit;font-size:12.5px;color:var(--fg);background:#fff;border:1px solid var(--border);border-radius:999px;padding:3px 10px 3px 8px}
button.legend-item{cursor:pointer}
button.legend-item:hover{border-color:#c5ccd6}
.legend-item[data-present="false"]{color:var(--faint)}
.legend-item[aria-pressed="false"]{opacity:.5;text-decoration:line-through}
.legend-static{border-style:dashed}
.swatch{display:inline-block;width:10px;height:10px;border-radius:3px;flex:none}
.swatch-chosen{background:#fff;outline:2px solid var(--fg);outline-offset:-1px}
.swatch-estimated{background:repeating-linear-gradient(45deg,#9aa1ab 0 2px,#e3e7ed 2px 4px)}
.tl{--label:210px;--result:210px}
.tl-row{display:grid;grid-template-columns:var(--label) minmax(0,1fr) var(--result);align-items:center;gap:14px;min-height:32px;border-top:1px solid var(--line)}
.tl-row:hover{background:#fafbfc}
.tl-axis{min-height:22px;border-top:0}
.tl-axis:hover{background:none}
.tl-label{font-family:var(--mono);font-size:12.5px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.tl-track{position:relative;height:24px;background-image:linear-gradient(to right,var(--line) 1px,transparent 1px);background-size:var(--tick) 100%}
.tl-axis .tl-track{background:none;height:18px}
.tick{position:absolute;top:0;transform:translateX(-50%);font-size:11px;color:var(--faint);white-space:nowrap}
.tick:first-child{transform:none}
.bar{position:absolute;top:5px;height:14px;min-width:4px;border:0;border-radius:4px;padding:0;cursor:pointer;transition:filter .1s}
.bar:hover{filter:brightness(1.1) saturate(1.1)}
.bar:focus-visible{outline:2px solid #3d7fe0;outline-offset:2px}
.bar[data-chosen]{outline:1.5px solid var(--fg);outline-offset:1.5px}
.bar[data-estimated]{background-image:repeating-linear-gradient(45deg,rgba(255,255,255,.55) 0 3px,transparent 3px 6px)}
.bar.selected{box-shadow:0 0 0 4px rgba(61,127,224,.35)}
${outcomeRules}
/* A reward of 0 is still an outcome, but it must not read as a pass at a glance. */
.bar[data-outcome="rewarded"][data-reward="0"],.swatch-zero{background:#b7e0cb;box-shadow:inset 0 0 0 1px #2e9e6a}
.res[data-reward="0"]{--tone:var(--muted)}
.res{display:flex;flex-direction:column;font-size:13px;line-height:1.25;color:var(--tone,var(--fg));font-weight:600;white-space:nowrap;min-width:0}
.res>*{overflow:hidden;text-overflow:ellipsis}
.res-num{font-weight:700}
.res-type{font-family:var(--mono);font-size:11px;color:var(--muted);font-weight:400}
.detail{margin-top:14px;border:1px solid var(--border);border-radius:10px;padding:14px 16px;background:#fbfcfd}
.detail h3{margin:0 0 8px;font-size:14px;font-weight:650;display:flex;align-items:center;gap:8px;overflow-wrap:anywhere}
.detail dl{display:grid;grid-template-columns:max-content 1fr;gap:3px 14px;margin:0 0 10px;font-size:13px}
.detail dt{color:var(--muted)}
.detail dd{margin:0;overflow-wrap:anywhere}
.detail table{border-collapse:collapse;font-size:12.5px;min-width:420px}
.detail th,.detail td{text-align:left;padding:3px 14px 3px 0;border-bottom:1px solid var(--line)}
.detail th{color:var(--muted);font-weight:600}
.detail td.num,.detail th.num{text-align:right}
.detail-close{margin-left:auto;font:inherit;font-size:12px;background:none;border:1px solid var(--border);border-radius:6px;padding:1px 8px;cursor:pointer;color:var(--muted)}
.hint{margin:12px 0 0;font-size:12.5px;color:var(--faint)}
.empty,.muted{color:var(--muted);font-size:13.5px}
.chips{display:flex;flex-wrap:wrap;gap:8px;margin-bottom:14px}
.chip{display:inline-flex;align-items:center;gap:7px;border:1px solid var(--border);border-radius:999px;padding:4px 12px 4px 10px;font-size:13px}
.chip-num{font-weight:700}
.ftable{border:1px solid var(--border);border-radius:10px;overflow:hidden}
.frow{display:grid;grid-template-columns:minmax(180px,1.3fr) minmax(120px,.8fr) minmax(0,1.6fr) 80px;gap:14px;align-items:center;padding:9px 14px}
.fhead{background:#f8f9fb;border-bottom:1px solid var(--border)}
.ftype+.ftype{border-top:1px solid var(--line)}
.ftype>summary{cursor:pointer;list-style:none}
.ftype>summary::-webkit-details-marker{display:none}
.ftype>summary:hover{background:#fafbfc}
.ftype[open]>summary{background:#f4f6f9}
.ftype-name{display:flex;align-items:center;gap:8px;font-family:var(--mono);font-size:13px;font-weight:600;overflow-wrap:anywhere}
.ftype-name::before{content:"";width:0;height:0;border:4.5px solid transparent;border-left:6px solid var(--faint);border-right-width:0;transition:transform .1s;flex:none}
.ftype[open] .ftype-name::before{transform:rotate(90deg)}
.ftype-cat{font-size:13px;color:var(--muted)}
.ftype-tasks{font-family:var(--mono);font-size:12px;color:var(--muted);white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.num{text-align:right;font-weight:650}
.chains{padding:4px 16px 14px 36px;background:#fcfcfd}
.chain{border-left:3px solid var(--border);padding:2px 0 2px 12px;margin:10px 0}
.chain-head{display:flex;flex-wrap:wrap;align-items:baseline;gap:4px 10px;font-size:13px;margin-bottom:4px}
.chain-task{font-family:var(--mono);font-weight:650;overflow-wrap:anywhere}
.chain-attempt{color:var(--muted)}
.chain-dir{color:var(--faint);font-size:11.5px}
.causes{list-style:none;margin:0;padding:0}
.causes li{margin:4px 0}
.causes li+li{margin-left:16px}
.causes li+li::before{content:"caused by";display:block;font-size:11px;color:var(--faint);text-transform:uppercase;letter-spacing:.06em}
.cause-name{font-family:var(--mono);font-size:12.5px;font-weight:650}
.cause-type{font-family:var(--mono);font-size:11px;color:var(--muted);border:1px solid var(--border);border-radius:4px;padding:0 5px;margin-left:8px}
.cause-msg{font-family:var(--mono);font-size:12px;color:#344054;white-space:pre-wrap;overflow-wrap:anywhere;background:#f5f6f8;border-radius:6px;padding:6px 9px;margin-top:3px}
.leak{border-left:6px solid var(--bad);background:linear-gradient(#fff,#fff8f8)}
.leak h2{color:var(--bad)}
.leak-note{margin:0 0 12px;font-size:13.5px;color:#3a2326}
.leaks{width:100%;border-collapse:collapse;font-size:13px}
/* break-word, not anywhere: columns keep their words' width, and only the error wraps. */
.leaks th,.leaks td{text-align:left;padding:5px 14px 5px 0;border-bottom:1px solid var(--line);vertical-align:top;overflow-wrap:break-word}
.leaks th{color:var(--muted);font-weight:600;white-space:nowrap}
.leaks .num{text-align:right}
.leak-error{font-family:var(--mono);font-size:12px;width:55%}
.phases{width:100%;border-collapse:collapse;font-size:13px}
.phases th,.phases td{text-align:left;padding:5px 14px 5px 0;border-bottom:1px solid var(--line)}
.phases th{color:var(--muted);font-weight:600;white-space:nowrap}
.phases .num{text-align:right}
footer{color:var(--faint);font-size:12px;margin-top:8px}
@media (max-width:920px){.headline{grid-template-columns:1fr}.tl{--label:130px;--result:120px}.frow{grid-template-columns:1fr 100px 60px}.ftype-tasks,.fhead span:nth-child(3){display:none}}
`;
