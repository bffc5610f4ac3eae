/**
 * The page's only script, inline (the page loads nothing) and small: the legend filters the
 * timeline by outcome, and a click on a bar shows that attempt's steps from the embedded JSON.
 * Everything it writes goes through textContent, never innerHTML: the data is untrusted text.
 * Plain ES2020 in a string, since the package compiles without DOM types; the browser test runs it.
 */
export const REPORT_SCRIPT = `(() => {
  'use strict';
  const source = document.getElementById('berth-report-data');
  const data = source ? JSON.parse(source.textContent || '{}') : {};
  const attempts = Array.isArray(data.attempts) ? data.attempts : [];
  const timeline = document.querySelector('.tl');
  const detail = document.getElementById('attempt-detail');

  for (const button of document.querySelectorAll('[data-filter]')) {
    button.addEventListener('click', () => {
      const shown = button.getAttribute('aria-pressed') !== 'true';
      button.setAttribute('aria-pressed', String(shown));
      if (timeline) timeline.classList.toggle('hide-' + button.getAttribute('data-filter'), !shown);
    });
  }

  const el = (tag, text, className) => {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (className) node.className = className;
    return node;
  };
  const duration = (ms) => (ms < 1000 ? Math.round(ms) + ' ms' : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s');
  const labels = { rewarded: 'rewarded', task_failure: 'task failure', transient_infra: 'transient infra',
    permanent_infra: 'permanent infra', unclassified: 'unclassified', cancelled: 'cancelled' };

  const show = (bar) => {
    const a = attempts[Number(bar.getAttribute('data-index'))];
    if (!a || !detail) return;
    for (const other of document.querySelectorAll('.bar.selected')) other.classList.remove('selected');
    bar.classList.add('selected');
    detail.replaceChildren();
    const title = el('h3');
    const swatch = el('span', undefined, 'swatch');
    swatch.setAttribute('data-outcome', a.outcome);
    const close = el('button', 'close', 'detail-close');
    close.type = 'button';
    close.addEventListener('click', () => { detail.hidden = true; bar.classList.remove('selected'); bar.focus(); });
    title.append(swatch, el('span', a.taskId + ' · attempt ' + a.attempt + (a.chosen ? ' · chosen' : '')), close);
    const facts = el('dl');
    const fact = (name, value) => { if (value !== undefined && value !== '') facts.append(el('dt', name), el('dd', String(value))); };
    fact('outcome', labels[a.outcome] || a.outcome);
    fact('reward', a.reward);
    fact('started', a.startedAt ? a.startedAt.replace('T', ' ').replace('Z', ' UTC') : 'unknown (no result.json)');
    fact('duration', duration(a.durationMs));
    fact('error type', a.type);
    fact('message', a.message);
    fact('files', a.dir + '/');
    detail.append(title, facts);
    if (Array.isArray(a.steps) && a.steps.length > 0) {
      const table = el('table');
      const head = el('tr');
      head.append(el('th', 'step'), el('th', 'at', 'num'), el('th', 'took', 'num'), el('th', 'ended'));
      table.append(head);
      for (const step of a.steps) {
        const row = el('tr');
        const ended = step.ended + (step.exitCode !== undefined ? ' (exit ' + step.exitCode + ')' : '') + (step.errorType ? ' · ' + step.errorType : '');
        row.append(el('td', step.name), el('td', duration(step.offsetMs), 'num'), el('td', duration(step.durationMs), 'num'), el('td', ended));
        table.append(row);
      }
      detail.append(table);
    }
    detail.hidden = false;
  };
  for (const bar of document.querySelectorAll('.bar')) bar.addEventListener('click', () => show(bar));
})();`;
