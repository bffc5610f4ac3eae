import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import type { JobData } from '../job/job-data.js';
import { escapeHtml, jsonForScript } from './html-escape.js';
import { reportData } from './html-data.js';
import { renderFailures } from './html-failures.js';
import { renderCounts, renderHeader, renderHeadline } from './html-headline.js';
import { renderSandboxesLeft } from './html-sandboxes.js';
import { renderStartPhases } from './start-phases.js';
import { REPORT_SCRIPT } from './html-script.js';
import { REPORT_CSS } from './html-style.js';
import { renderTimeline } from './html-timeline.js';

/**
 * The policy says what the page is: it loads nothing from anywhere, and the only script that runs
 * is ours (by hash), so even text that slipped past escaping could not execute or phone home.
 * Inline style attributes place the timeline's bars, hence 'unsafe-inline' for styles only.
 */
function contentSecurityPolicy(script: string): string {
  const hash = createHash('sha256').update(script, 'utf8').digest('base64');
  return ["default-src 'none'", "style-src 'unsafe-inline'", `script-src 'sha256-${hash}'`, "base-uri 'none'", "form-action 'none'"].join('; ');
}

/**
 * report.html for a finished job: one self-contained file (styles, script and data inline; no
 * fonts, images or requests) that shows coverage and validity first, then any sandbox the run
 * could not remove, then the counts and how long sandbox starts took per phase, then every attempt on a timeline, then the failures with their cause chains. Numbers from report.json carry
 * data-metric="<path>"; the job's data is embedded as JSON in #berth-report-data.
 */
export function renderReportHtml(job: JobData): string {
  const title = `berth report · ${basename(job.jobDir) || job.jobDir}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy(REPORT_SCRIPT))}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="berth">
<title>${escapeHtml(title)}</title>
<style>${REPORT_CSS}</style>
</head>
<body>
<main>
${renderHeader(job)}
${renderHeadline(job)}
${renderSandboxesLeft(job)}
${renderCounts(job)}
${renderStartPhases(job)}
${renderTimeline(job)}
${renderFailures(job)}
<footer>Written by berth from report.json and each attempt's result.json. The data behind this page is embedded in it as JSON (#berth-report-data).</footer>
</main>
<script type="application/json" id="berth-report-data">${jsonForScript(reportData(job))}</script>
<script>${REPORT_SCRIPT}</script>
</body>
</html>
`;
}
