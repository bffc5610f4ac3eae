// The callbacks passed to page.$eval run in the browser: they are typed against the DOM.
/// <reference lib="dom" />
// report.html in Debian's Chromium. First from a real job: runHarborJob on the Docker engine over a
// generated dataset (passing, failing and reward-less tasks, one whose first attempt is killed so
// it is retried, and one on a private image with no credentials: permanent infra, so the run is
// invalid). The page must load nothing but itself and log no error; every number marked
// data-metric must match report.json; the timeline must hold one row per task and one bar per
// attempt with the chosen ones marked; a failure type must open onto its cause chain. A full-page
// screenshot goes to test-artifacts/report.png for a person to look at. Then from a hand-built job
// whose task ids and messages are hostile markup: it must stay text.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Docker from 'dockerode';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDockerBackend } from '@berth/backend-docker';
import { runHarborJob, type AttemptResultFile, type HarborJobReport, type HarborTaskSummary } from '@berth/harbor';
import { loadJob } from '../src/job/job-data.js';
import { renderReportHtml } from '../src/report/html.js';
import { writeDataset, PRIVATE_IMAGE, type TaskDef } from './support/dataset.js';
import { fixtureJob } from './support/job-fixture.js';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT = fileURLToPath(new URL('../../../test-artifacts/report.png', import.meta.url));
// Its own tag of the private repository: other test files pull and remove other tags in parallel,
// and a copy pulled with credentials by one of them must not let this run's pull succeed.
const OUR_PRIVATE_IMAGE = PRIVATE_IMAGE.replace(/:[^:/]+$/, ':cli-report');

const TASKS: TaskDef[] = [
  { id: 'pass-alpha', kind: 'pass' },
  { id: 'pass-killed-once', kind: 'pass' },
  { id: 'fail-verifier-zero', kind: 'fail' },
  { id: 'no-reward-file', kind: 'no-reward' },
  { id: 'private-image', kind: 'private' },
  { id: 'pass-omega', kind: 'pass' },
];
const KILLED = 'pass-killed-once';

const docker = new Docker();
let root: string;
let browser: Browser;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-cli-report-'));
  browser = await puppeteer.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--headless=new'] });
});

afterAll(async () => {
  await browser?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** A report opened in the browser, with everything it asked for or complained about. */
interface OpenedReport {
  page: Page;
  url: string;
  requests: string[];
  consoleErrors: string[];
  pageErrors: string[];
  failedRequests: string[];
}

async function openReport(html: string, path: string): Promise<OpenedReport> {
  await writeFile(path, html);
  const url = pathToFileURL(path).href;
  const page = await browser.newPage();
  const opened: OpenedReport = { page, url, requests: [], consoleErrors: [], pageErrors: [], failedRequests: [] };
  await page.setViewport({ width: 1280, height: 900 });
  page.on('console', (message) => {
    if (message.type() === 'error') opened.consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => opened.pageErrors.push(String(error)));
  page.on('requestfailed', (request) => opened.failedRequests.push(`${request.url()}: ${request.failure()?.errorText ?? '?'}`));
  // Every request is seen here; only the page itself may load.
  await page.setRequestInterception(true);
  page.on('request', (request) => {
    opened.requests.push(request.url());
    if (request.url() === url) void request.continue();
    else void request.abort();
  });
  await page.goto(url, { waitUntil: 'load' });
  return opened;
}

function expectQuiet(opened: OpenedReport): void {
  expect(opened.consoleErrors).toEqual([]);
  expect(opened.pageErrors).toEqual([]);
  expect(opened.failedRequests).toEqual([]);
  expect(opened.requests).toEqual([opened.url]);
}

/** What a data-metric's text must be, worked out from report.json alone. */
function expectedMetric(jobReport: HarborJobReport, name: string): string {
  const reward = /^tasks\.(\d+)\.reward$/.exec(name);
  if (reward) {
    const value = jobReport.tasks[Number(reward[1])]?.reward;
    if (value === undefined) throw new Error(`${name}: that task has no reward in report.json`);
    return Number.isInteger(value) ? String(value) : value.toFixed(3);
  }
  const [head, ...rest] = name.split('.');
  let value: unknown;
  if (head === 'byType' || head === 'byCategory') value = jobReport.report[head][rest.join('.')];
  else value = name.split('.').reduce<unknown>((v, key) => (v as Record<string, unknown> | undefined)?.[key], jobReport.report);
  if (typeof value !== 'number') throw new Error(`${name} is not a number in report.json (${JSON.stringify(value)})`);
  if (['coverage', 'score.mean', 'score.coverage'].includes(name)) return value.toFixed(3);
  expect(Number.isInteger(value), `${name} = ${value}`).toBe(true);
  return String(value);
}

/** Checks every data-metric on the page against report.json; returns the names found. */
async function checkMetrics(page: Page, jobReport: HarborJobReport): Promise<Set<string>> {
  const metrics = await page.$$eval('[data-metric]', (elements) => elements.map((e) => [e.getAttribute('data-metric') ?? '', e.textContent ?? ''] as const));
  for (const [name, text] of metrics) expect(text, name).toBe(expectedMetric(jobReport, name));
  return new Set(metrics.map(([name]) => name));
}

/** The outcome a bar must show for an attempt, from report.json's words. */
function expectedOutcome(attempt: HarborTaskSummary['attempts'][number]): string {
  if (attempt.status === 'outcome') return 'rewarded';
  const known = ['task_failure', 'transient_infra', 'permanent_infra', 'cancelled'];
  return attempt.category !== undefined && known.includes(attempt.category) ? attempt.category : 'unclassified';
}

describe('report.html of a real job', () => {
  let jobDir: string;
  let jobReport: HarborJobReport;
  let opened: OpenedReport;
  let page: Page;

  beforeAll(async () => {
    const tasksDir = await writeDataset(join(root, 'tasks'), TASKS);
    const privateToml = join(tasksDir, 'private-image', 'task.toml');
    await writeFile(privateToml, (await readFile(privateToml, 'utf8')).replace(PRIVATE_IMAGE, OUR_PRIVATE_IMAGE));
    await docker
      .getImage(OUR_PRIVATE_IMAGE)
      .remove({ force: true })
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode !== 404) throw error;
      });
    // No credentials from anywhere: an empty Docker config, whatever this machine has.
    const dockerConfig = join(root, 'docker-config');
    await mkdir(dockerConfig);

    jobDir = join(root, 'job');
    await runHarborJob({
      tasksDir,
      backend: createDockerBackend({ dockerConfigEnv: { DOCKER_CONFIG: dockerConfig } }),
      jobDir,
      concurrency: 4,
      maxAttempts: 2,
      backoff: { initialMs: 50, maxMs: 200 },
      hooks: {
        // The container of one task's first attempt dies under it: transient infra, retried, so
        // the timeline has a task with two attempts of which the second is chosen.
        async afterStart(env, task, ctx) {
          if (task.id !== KILLED || ctx.attempt !== 1) return;
          const container = docker.getContainer(env.id);
          await container.kill();
          await container.wait();
        },
      },
    });
    jobReport = JSON.parse(await readFile(join(jobDir, 'report.json'), 'utf8')) as HarborJobReport;
    opened = await openReport(renderReportHtml(await loadJob(jobDir)), join(jobDir, 'report.html'));
    page = opened.page;
  }, 300_000);

  it('comes from the run the dataset makes', () => {
    const { report } = jobReport;
    expect(report).toMatchObject({
      total: 6,
      scored: 5,
      taskFailures: 1,
      infraFailed: { total: 1, transient: 0, permanent: 1, unclassified: 0 },
      notRun: { total: 0 },
      attempts: 7,
      retries: 1,
      valid: false,
    });
    expect(report.byType).toMatchObject({ ImagePullError: 1, RewardFileMissing: 1 });
    expect(report.byCategory).toMatchObject({ transient_infra: 1, permanent_infra: 1, task_failure: 1 });
    expect(jobReport.tasks.find((t) => t.taskId === KILLED)).toMatchObject({ status: 'rewarded', chosenAttempt: 2 });
    // Every attempt's container, the killed one included, but none for the image that would not pull.
    expect(report.sandboxes).toEqual({ created: 6, removed: 6, notRemoved: [] });
  });

  it('shows every number of report.json it shows as report.json has it', async () => {
    const names = await checkMetrics(page, jobReport);
    const required = [
      'total',
      'scored',
      'coverage',
      'taskFailures',
      'infraFailed.total',
      'infraFailed.transient',
      'infraFailed.permanent',
      'infraFailed.unclassified',
      'notRun.total',
      'notRun.deadline',
      'notRun.cancelled',
      'attempts',
      'retries',
      'score.mean',
      'score.over',
      'score.coverage',
      'sandboxes.created',
      'sandboxes.removed',
      ...Object.keys(jobReport.report.byType).map((t) => `byType.${t}`),
      ...Object.keys(jobReport.report.byCategory).map((c) => `byCategory.${c}`),
      ...jobReport.tasks.flatMap((t, i) => (t.reward !== undefined ? [`tasks.${i}.reward`] : [])),
    ];
    for (const name of required) expect(names, name).toContain(name);
  });

  it('puts validity and its reasons at the top', async () => {
    const validity = await page.$eval('#validity', (e) => ({ valid: e.getAttribute('data-valid'), text: (e as HTMLElement).innerText }));
    expect(validity.valid).toBe('false');
    expect(validity.text).toMatch(/invalid/i);
    for (const reason of jobReport.report.invalidReasons) expect(validity.text).toContain(reason);
  });

  it('embeds the data as JSON the page can read back', async () => {
    const embedded = await page.$eval('#berth-report-data', (e) => JSON.parse(e.textContent ?? 'null') as { report: unknown; attempts: unknown[] });
    expect(embedded.report).toEqual(jobReport.report);
    expect(embedded.attempts).toHaveLength(jobReport.report.attempts);
  });

  it('draws one timeline row per task and one bar per attempt, the chosen ones marked', async () => {
    const rows = await page.$$eval('.tl-row[data-task]', (elements) =>
      elements.map((row) => {
        const track = row.querySelector('.tl-track')!.getBoundingClientRect();
        return {
          task: row.getAttribute('data-task'),
          bars: Array.from(row.querySelectorAll('.bar')).map((bar) => {
            const box = bar.getBoundingClientRect();
            return {
              attempt: Number(bar.getAttribute('data-attempt')),
              outcome: bar.getAttribute('data-outcome'),
              chosen: bar.getAttribute('data-chosen') === 'true',
              title: bar.getAttribute('title') ?? '',
              left: box.left,
              right: box.right,
              inside: box.left >= track.left - 0.5 && box.right <= track.right + 4.5 && box.width >= 3,
              outline: getComputedStyle(bar).outlineStyle,
            };
          }),
        };
      }),
    );
    expect(rows.map((r) => r.task)).toEqual(jobReport.tasks.map((t) => t.taskId));
    for (const [i, row] of rows.entries()) {
      const summary = jobReport.tasks[i]!;
      expect(
        row.bars.map((b) => b.attempt),
        row.task ?? '',
      ).toEqual(summary.attempts.map((a) => a.attempt));
      expect(
        row.bars.map((b) => b.outcome),
        row.task ?? '',
      ).toEqual(summary.attempts.map(expectedOutcome));
      expect(
        row.bars.filter((b) => b.chosen).map((b) => b.attempt),
        row.task ?? '',
      ).toEqual(summary.chosenAttempt === undefined ? [] : [summary.chosenAttempt]);
      for (const bar of row.bars) {
        expect(bar.inside, `${row.task} attempt ${bar.attempt} lies on its track`).toBe(true);
        expect(bar.title).toContain(summary.taskId);
        // The mark is visible, not only an attribute.
        expect(bar.outline, `${row.task} attempt ${bar.attempt}`).toBe(bar.chosen ? 'solid' : 'none');
      }
    }
    const killed = rows.find((r) => r.task === KILLED)!;
    expect(killed.bars[0]!.outcome).toBe('transient_infra');
    expect(killed.bars[1]!.left).toBeGreaterThanOrEqual(killed.bars[0]!.right - 1);
    expect(await page.$$eval('.bar', (bars) => bars.length)).toBe(jobReport.report.attempts);
  });

  it('opens a failure type onto its cause chain', async () => {
    const result = JSON.parse(await readFile(join(jobDir, 'private-image', 'attempt-1', 'result.json'), 'utf8')) as AttemptResultFile;
    const message = result.failure?.message ?? '';
    expect(message).toMatch(/no basic auth credentials/);
    const chains = '.ftype[data-type="ImagePullError"] .chains';
    expect(await page.$eval(chains, (e) => (e as HTMLElement).checkVisibility())).toBe(false);
    await page.click('.ftype[data-type="ImagePullError"] > summary');
    expect(await page.$eval('.ftype[data-type="ImagePullError"]', (e) => (e as HTMLDetailsElement).open)).toBe(true);
    const shown = await page.$eval(chains, (e) => ({ visible: (e as HTMLElement).checkVisibility(), text: (e as HTMLElement).innerText }));
    expect(shown.visible).toBe(true);
    expect(shown.text).toContain('private-image');
    expect(shown.text).toContain('attempt 1');
    expect(shown.text).toContain(message);
    const causes = await page.$$eval(`${chains} .causes > li .cause-name`, (names) => names.map((n) => n.textContent));
    expect(causes[0]).toBe('ImagePullError');
    expect(causes.length).toBeGreaterThanOrEqual(2);
  });

  it('filters the timeline by outcome and shows an attempt when its bar is clicked', async () => {
    const opacity = () => page.$eval('.bar[data-outcome="rewarded"]', (e) => Number(getComputedStyle(e).opacity));
    expect(await opacity()).toBe(1);
    await page.click('[data-filter="rewarded"]');
    expect(await opacity()).toBeLessThan(0.2);
    await page.click('[data-filter="rewarded"]');
    expect(await opacity()).toBe(1);

    await page.click(`.tl-row[data-task="${KILLED}"] .bar[data-attempt="1"]`);
    const detail = await page.$eval('#attempt-detail', (e) => ({ hidden: (e as HTMLElement).hidden, text: (e as HTMLElement).innerText }));
    expect(detail.hidden).toBe(false);
    expect(detail.text).toContain(`${KILLED} · attempt 1`);
    expect(detail.text).toMatch(/transient infra/);
  });

  it('saves a full-page screenshot', async () => {
    // Close the attempt panel again so the picture shows the page as it opens, plus one open chain.
    await page.click('#attempt-detail .detail-close');
    await mkdir(join(SCREENSHOT, '..'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    const png = await readFile(SCREENSHOT);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    // IHDR: width and height, big-endian, at bytes 16 and 20.
    expect(png.readUInt32BE(16)).toBe(1280);
    expect(png.readUInt32BE(20)).toBeGreaterThan(900);
    expect(png.length).toBeGreaterThan(50_000);
  });

  it('loaded nothing but itself and logged no error', () => {
    expectQuiet(opened);
  });
});

describe('report.html of a job whose text is hostile', () => {
  const ID_TAIL = '<img src=y onerror="window.__pwned=1">';
  const MESSAGE_TAIL = '</script><script>window.__pwned=2</script><!--';
  const job = fixtureJob({ rename: (id) => `${id}${ID_TAIL}`, message: (m) => `${m} ${MESSAGE_TAIL}` });
  let opened: OpenedReport;

  beforeAll(async () => {
    opened = await openReport(renderReportHtml(job), join(root, 'hostile.html'));
  });

  it('keeps task ids and messages as text', async () => {
    const { page } = opened;
    const found = await page.evaluate(() => ({
      // typeof: an undefined value would not survive the trip out of the page.
      pwned: typeof (window as Window & { __pwned?: number }).__pwned,
      images: document.querySelectorAll('img').length,
      scripts: document.querySelectorAll('script').length,
      labels: Array.from(document.querySelectorAll('.tl-label[title]')).map((e) => e.textContent),
      messages: Array.from(document.querySelectorAll('.cause-msg')).map((e) => e.textContent ?? ''),
    }));
    expect(found).toMatchObject({ pwned: 'undefined', images: 0, scripts: 2 });
    expect(found.labels).toEqual(job.tasks.map((t) => t.summary.taskId));
    expect(found.messages.length).toBeGreaterThan(0);
    for (const message of found.messages) expect(message).toContain(MESSAGE_TAIL);
    const embedded = await page.$eval(
      '#berth-report-data',
      (e) => JSON.parse(e.textContent ?? 'null') as { attempts: Array<{ taskId: string; message?: string }> },
    );
    expect(embedded.attempts.map((a) => a.taskId)).toEqual(job.tasks.flatMap((t) => t.attempts.map((a) => a.taskId)));
    expect(embedded.attempts.find((a) => a.message)?.message).toContain(MESSAGE_TAIL);
  });

  it('shows every kind of ending, the numbers as its report has them', async () => {
    const { page } = opened;
    await checkMetrics(page, job.report);
    const outcomes = await page.$$eval('.bar', (bars) => bars.map((b) => b.getAttribute('data-outcome')));
    expect(new Set(outcomes)).toEqual(new Set(['rewarded', 'task_failure', 'transient_infra', 'permanent_infra', 'unclassified', 'cancelled']));
    // The attempt without result.json is placed by its duration, and says so.
    const estimated = await page.$$eval('.bar[data-estimated="true"]', (bars) => bars.map((b) => b.getAttribute('title') ?? ''));
    expect(estimated).toHaveLength(1);
    expect(estimated[0]).toContain('no timestamps');
    // A bar of the hostile page opens its detail panel without trouble.
    await page.click('.bar[data-outcome="cancelled"]');
    expect(await page.$eval('#attempt-detail', (e) => (e as HTMLElement).innerText)).toContain(MESSAGE_TAIL);
  });

  it('loaded nothing but itself and logged no error', () => {
    expectQuiet(opened);
  });
});
