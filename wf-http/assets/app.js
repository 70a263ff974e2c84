// wf web view, part 1: helpers (DOM building, the API with its token and the token's role,
// times, values, the confirmation dialog every action goes through), the router and the runs
// list. The run page lives in run.js (its streams in streams.js), the batches and schedules pages in ops.js. Plain
// browser JavaScript, no dependencies. Run data only ever reaches the page as text (textContent, attribute values
// set one by one): never as markup.
'use strict';

const wfui = (window.wfui = {});

(() => {
  const TOKEN_KEY = 'wf-token';
  // The page is served at <root>/ui/; the API routes live at <root>/.
  const ROOT = new URL('../', document.baseURI);
  const PAGE = 25;
  const STATUSES = ['running', 'completed', 'failed', 'continued_as_new', 'terminated', 'cancelled', 'timed_out', 'reset'];

  /** An element with properties (`class`, `text`, `on<event>`, attributes) and children. */
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = String(v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'value') e.value = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  /** Replaces the children of `node` with `children`. */
  function fill(node, ...children) {
    node.replaceChildren();
    for (const c of children.flat(Infinity)) {
      if (c !== null && c !== undefined && c !== false) node.append(c instanceof Node ? c : String(c));
    }
    return node;
  }

  /** A failed API call: the status and the server's `{"error", "message"}`. */
  class ApiError extends Error {
    constructor(status, body) {
      const code = body && body.error ? body.error : 'http_' + status;
      const message = body && body.message ? body.message : 'the server answered ' + status;
      super(code + ': ' + message);
      this.status = status;
      this.code = code;
      this.body = body;
    }
  }

  /** The server wants a token and has none (or a wrong one). */
  class NeedToken extends Error {}

  const token = {
    get: () => sessionStorage.getItem(TOKEN_KEY),
    set: (t) => sessionStorage.setItem(TOKEN_KEY, t),
    clear: () => sessionStorage.removeItem(TOKEN_KEY),
  };

  /** Calls the API: `path` is relative to the root (segments already encoded). */
  async function api(method, path, body) {
    const headers = { Accept: 'application/json' };
    const t = token.get();
    if (t) headers.Authorization = 'Bearer ' + t;
    const init = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(new URL(path, ROOT), init);
    } catch (e) {
      throw new ApiError(0, { error: 'unreachable', message: 'the server did not answer (' + e.message + ')' });
    }
    const text = await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (_) {
      data = { message: text.slice(0, 300) };
    }
    if (res.status === 401) throw new NeedToken(data && data.message ? data.message : 'a token is needed');
    if (!res.ok) throw new ApiError(res.status, data);
    return { status: res.status, data };
  }

  const seg = encodeURIComponent;

  let typesCache = null;
  /** The served workflow types with their handlers, by name. */
  async function types() {
    if (!typesCache) {
      const { data } = await api('GET', 'ui/types');
      typesCache = new Map(data.types.map((t) => [t.name, t]));
    }
    return typesCache;
  }

  // ---- The token's role ----

  const RANK = { read: 1, write: 2, admin: 3 };
  let roleCache = null;
  /** The token's role (`GET /_whoami`: `admin` when the server checks no token). The page
   * offers only what it may do; the server checks every call anyway. */
  async function role() {
    if (!roleCache) {
      const { data } = await api('GET', '_whoami');
      roleCache = data.role;
      showRole();
    }
    return roleCache;
  }
  /** Whether role `have` may do what role `need` may. */
  const can = (have, need) => (RANK[have] || 0) >= RANK[need];

  function showRole() {
    const badge = document.getElementById('token-role');
    badge.hidden = !(token.get() && roleCache);
    badge.textContent = roleCache || '';
    badge.title = roleCache ? 'this token has the ' + roleCache + ' role' : '';
  }

  /** Forgets what was learnt with the token (a new one may serve other types or roles). */
  function forgetCaches() {
    typesCache = null;
    roleCache = null;
  }

  // ---- Times and values ----

  function duration(ms) {
    if (ms === null || ms === undefined || !isFinite(ms)) return '';
    const neg = ms < 0;
    ms = Math.abs(ms);
    let s;
    if (ms < 1000) s = Math.round(ms) + ' ms';
    else if (ms < 60000) s = (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
    else if (ms < 3600000) s = Math.floor(ms / 60000) + ' min ' + Math.floor((ms % 60000) / 1000) + ' s';
    else if (ms < 86400000) s = Math.floor(ms / 3600000) + ' h ' + Math.floor((ms % 3600000) / 60000) + ' min';
    else s = Math.floor(ms / 86400000) + ' d ' + Math.floor((ms % 86400000) / 3600000) + ' h';
    return neg ? '-' + s : s;
  }

  function ago(ms) {
    const d = Date.now() - ms;
    if (Math.abs(d) < 5000) return 'just now';
    const coarse = (x) => {
      if (x < 60000) return Math.round(x / 1000) + ' s';
      if (x < 3600000) return Math.round(x / 60000) + ' min';
      if (x < 86400000) return Math.round(x / 3600000) + ' h';
      return Math.round(x / 86400000) + ' d';
    };
    return d > 0 ? coarse(d) + ' ago' : 'in ' + coarse(-d);
  }

  function iso(ms) {
    return new Date(ms).toISOString().replace('T', ' ').replace('Z', ' UTC');
  }

  /** A time shown relatively ("3 min ago"), exact on hover, kept fresh by a timer. */
  function when(ms) {
    if (ms === null || ms === undefined) return el('span', { class: 'muted', text: '—' });
    return el('time', { datetime: new Date(ms).toISOString(), title: iso(ms), 'data-ms': ms, text: ago(ms) });
  }
  setInterval(() => {
    for (const t of document.querySelectorAll('time[data-ms]')) t.textContent = ago(Number(t.dataset.ms));
  }, 10000);

  function pretty(v) {
    return v === undefined ? '' : JSON.stringify(v, null, 2);
  }

  /** A value on one line, cut at `max` characters. */
  function short(v, max = 140) {
    const s = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v);
    if (s === undefined) return '';
    return s.length > max ? s.slice(0, max - 1) + '…' : s;
  }

  function statusPill(status) {
    return el('span', { class: 'status s-' + status, text: String(status).replace(/_/g, ' ') });
  }

  function runLink(type, id, text, runId) {
    const hash = '#/run/' + seg(type || '_') + '/' + seg(id) + (runId ? '?run=' + seg(runId) : '');
    return el('a', { href: hash, class: 'mono', text: text || id });
  }

  function errorBanner(e) {
    return el('div', { class: 'banner error', role: 'alert', text: e instanceof Error ? e.message : String(e) });
  }

  // ---- Actions: confirm, then show what happened ----

  let openDialog = null; // the confirmation on screen, and how to dismiss it
  /** Asks in the page (a modal `<dialog id="confirm">`, which a test can drive, unlike
   * `window.confirm`) whether to go on: `title`, what will happen (`text`: text or nodes), a
   * reason field (unless `reason` is false) and extra checkboxes (`checks`: `[{name, label}]`).
   * Resolves to `{reason, <check name>: bool}` when its action button is clicked, to null when dismissed. */
  function confirmAction({ title, text, action, danger = false, reason = true, reasonHint, checks = [] }) {
    if (openDialog) openDialog();
    return new Promise((resolve) => {
      const reasonInput = reason
        ? el('input', { id: 'confirm-reason', name: 'reason', autocomplete: 'off', placeholder: reasonHint || 'why, for the record (optional)' })
        : null;
      const boxes = checks.map((c) => ({ c, input: el('input', { type: 'checkbox', name: c.name }) }));
      let settled = false;
      const done = (value) => {
        if (settled) return;
        settled = true;
        openDialog = null;
        if (dialog.open) dialog.close();
        dialog.remove();
        resolve(value);
      };
      const dialog = el('dialog', { id: 'confirm', class: 'confirm', 'aria-labelledby': 'confirm-title' },
        el('form', {
          onsubmit: (ev) => {
            ev.preventDefault();
            const answer = { reason: reasonInput ? reasonInput.value.trim() : '' };
            for (const { c, input } of boxes) answer[c.name] = input.checked;
            done(answer);
          },
        },
        el('h2', { id: 'confirm-title', text: title }),
        el('div', { class: 'confirm-text' }, text),
        reasonInput ? el('label', {}, 'Reason', reasonInput) : null,
        boxes.map(({ c, input }) => el('label', { class: 'check' }, input, c.label)),
        el('div', { class: 'row confirm-buttons' },
          el('button', { type: 'submit', id: 'confirm-ok', class: danger ? 'danger' : '', text: action }),
          el('button', { type: 'button', id: 'confirm-cancel', class: 'ghost', text: 'Cancel', onclick: () => done(null) }))));
      // Escape dismisses the dialog.
      dialog.addEventListener('cancel', (ev) => {
        ev.preventDefault();
        done(null);
      });
      openDialog = () => done(null);
      document.body.append(dialog);
      dialog.showModal();
      (reasonInput || dialog.querySelector('#confirm-ok')).focus();
    });
  }

  /** Shows an action's result in `box`: what happened (text or nodes), or its error. */
  function report(box, ok, ...children) {
    box.className = 'outcome report ' + (ok ? 'ok' : 'error');
    box.setAttribute('role', ok ? 'status' : 'alert');
    fill(box, el('div', {}, children));
  }

  /** Confirms with `ask` (see `confirmAction`), then runs `work(answer)` with `button`
   * disabled and reports in `box` what it returns (text or nodes) or why it failed.
   * Resolves to whether the action ran and succeeded. */
  async function perform(box, button, ask, work) {
    const answer = await confirmAction(ask);
    if (!answer) return false;
    if (button) button.disabled = true;
    try {
      report(box, true, await work(answer));
      return true;
    } catch (e) {
      if (e instanceof NeedToken) route();
      else report(box, false, e instanceof Error ? e.message : String(e));
      return false;
    } finally {
      if (button) button.disabled = false;
    }
  }

  // ---- Token ----

  function showTokenForm(main, message) {
    const input = el('input', { type: 'password', name: 'token', autocomplete: 'off', required: true, class: 'mono' });
    const form = el(
      'form',
      {
        id: 'token-form',
        onsubmit: (ev) => {
          ev.preventDefault();
          token.set(input.value.trim());
          forgetCaches();
          route();
        },
      },
      el('h2', { text: 'This server needs a token' }),
      el('p', { class: 'muted', text: 'Enter the bearer token the server was started with. It is kept in this tab only (sessionStorage) and sent as an Authorization header.' }),
      token.get() ? el('div', { class: 'banner error', text: message }) : null,
      el('label', {}, 'Token', input),
      el('button', { type: 'submit', text: 'Continue' }),
    );
    fill(main, el('div', { class: 'panel token-box' }, form));
    input.focus();
  }

  // ---- Router ----

  let leave = null; // what the current page does when another one replaces it
  function onLeave(fn) {
    leave = fn;
  }

  function parseHash() {
    const h = location.hash.replace(/^#/, '') || '/';
    const [path, query] = h.split('?');
    return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query || '') };
  }

  let generation = 0;
  /** Renders the page the hash names into a fresh view; a view a newer route replaced
   * may finish its requests but is no longer on the page. `#main[data-rendered]` names the
   * hash once its view is complete. */
  async function route() {
    if (leave) leave();
    leave = null;
    if (openDialog) openDialog();
    const gen = ++generation;
    const hash = location.hash;
    document.getElementById('live').hidden = true;
    document.getElementById('forget-token').hidden = !token.get();
    showRole();
    const main = document.getElementById('main');
    delete main.dataset.rendered;
    const view = el('div', {}, el('p', { class: 'muted', text: 'Loading…' }));
    fill(main, view);
    const { parts, params } = parseHash();
    const page = ['batches', 'schedules', 'limits'].includes(parts[0]) ? parts[0] : 'runs';
    for (const name of ['runs', 'batches', 'schedules', 'limits']) {
      document.getElementById('nav-' + name).classList.toggle('active', name === page);
    }
    try {
      if (parts[0] === 'run' && parts.length >= 3) {
        await wfui.renderRun(view, parts[1], parts.slice(2).join('/'), params);
      } else if (page === 'batches') {
        await wfui.renderBatches(view, params);
      } else if (page === 'schedules') {
        await wfui.renderSchedules(view, params);
      } else if (page === 'limits') {
        await wfui.renderLimits(view, params);
      } else {
        await renderList(view, params);
      }
    } catch (e) {
      if (e instanceof NeedToken) showTokenForm(view, e.message);
      else fill(view, errorBanner(e), el('p', {}, el('a', { href: '#/', text: '← all runs' })));
    }
    if (gen === generation) main.dataset.rendered = hash;
  }

  // ---- The runs list ----

  const pageStack = []; // cursors of the pages before this one

  async function renderList(main, params) {
    document.title = 'wf · runs';
    const [known] = await Promise.all([types(), role()]);
    const type = params.get('type') || '';
    const status = params.get('status') || '';
    const all = params.get('all') === '1';
    const cursor = params.get('cursor') || '';

    const typeSelect = el('select', { name: 'type' }, el('option', { value: '', text: 'all types' }),
      [...known.keys()].map((n) => el('option', { value: n, text: n })));
    typeSelect.value = type;
    const statusSelect = el('select', { name: 'status' }, el('option', { value: '', text: 'any status' }),
      STATUSES.map((s) => el('option', { value: s, text: s.replace(/_/g, ' ') })));
    statusSelect.value = status;
    const allBox = el('input', { type: 'checkbox', name: 'all' });
    allBox.checked = all;
    const apply = (ev) => {
      if (ev) ev.preventDefault();
      pageStack.length = 0;
      const q = new URLSearchParams();
      if (typeSelect.value) q.set('type', typeSelect.value);
      if (statusSelect.value) q.set('status', statusSelect.value);
      if (allBox.checked) q.set('all', '1');
      const next = '#/' + (q.toString() ? '?' + q : '');
      if (location.hash === next) route();
      else location.hash = next;
    };
    typeSelect.addEventListener('change', apply);
    statusSelect.addEventListener('change', apply);
    allBox.addEventListener('change', apply);
    const filters = el('form', { class: 'filters', id: 'filters', onsubmit: apply },
      el('label', {}, 'Type', typeSelect),
      el('label', {}, 'Status', statusSelect),
      el('label', { class: 'check', title: 'Also list the earlier runs of workflows that continued as new' }, allBox, 'earlier runs too'),
      el('span', { class: 'spacer' }),
      el('button', { type: 'submit', class: 'ghost', text: 'Refresh' }));

    const q = new URLSearchParams({ limit: String(PAGE) });
    if (status) q.set('status', status);
    if (cursor) q.set('cursor', cursor);
    if (!all) q.set('latest', 'true');
    const { data } = await api('GET', seg(type || '_') + '/runs?' + q);

    const rows = data.runs.map((r) => {
      const started = el('td', {}, el('span', { class: 'muted', text: '…' }));
      const closed = el('td', {}, el('span', { class: 'muted', text: '…' }));
      const tr = el('tr', { class: 'run-row', 'data-workflow-id': r.workflow_id },
        el('td', { text: r.workflow_type }),
        el('td', { class: 'id' }, runLink(r.workflow_type, r.workflow_id, null, all ? r.run_id : null)),
        el('td', {}, statusPill(r.status), r.paused ? [' ', el('span', { class: 'status s-paused', text: 'paused' })] : null),
        started, closed,
        el('td', { text: String(r.history_length) }));
      return { r, started, closed, tr };
    });
    const table = rows.length
      ? el('table', { id: 'runs' },
        el('thead', {}, el('tr', {}, ['Type', 'Workflow id', 'Status', 'Started', 'Closed', 'Events'].map((h) => el('th', { text: h })))),
        el('tbody', {}, rows.map((x) => x.tr)))
      : el('p', { class: 'muted', id: 'runs-empty', text: 'No runs match these filters.' });

    const prev = el('button', { type: 'button', class: 'ghost small', text: '← Previous', disabled: !cursor,
      onclick: () => go(pageStack.pop() || '') });
    const next = el('button', { type: 'button', class: 'ghost small', text: 'Next →', disabled: !data.next_cursor,
      onclick: () => { pageStack.push(cursor); go(data.next_cursor); } });
    function go(c) {
      const p = new URLSearchParams(params);
      if (c) p.set('cursor', c);
      else p.delete('cursor');
      location.hash = '#/?' + p;
    }
    fill(main,
      el('div', { class: 'panel' },
        el('div', { class: 'run-head' }, el('h1', { text: 'Runs' }), el('span', { class: 'muted', text: type ? 'of ' + type : '' })),
        filters, table,
        el('div', { class: 'pager' }, el('span', { class: 'muted', text: rows.length ? 'page ' + (pageStack.length + 1) : '' }), prev, next)));

    // The list route has no times: each row asks for its run's description, a few at once.
    let i = 0;
    const worker = async () => {
      while (i < rows.length) {
        const x = rows[i++];
        try {
          const { data: d } = await api('GET', seg(x.r.workflow_type) + '/runs/' + seg(x.r.workflow_id));
          const same = d.run_id === x.r.run_id;
          fill(x.started, same ? when(d.started_at_ms) : el('span', { class: 'muted', text: 'earlier run' }));
          fill(x.closed, same ? when(d.closed_at_ms) : el('span', { class: 'muted', text: '' }));
        } catch (e) {
          fill(x.started, el('span', { class: 'muted', title: e.message, text: '?' }));
          fill(x.closed, '');
        }
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
  }

  const bearer = () => token.get();
  Object.assign(wfui, { el, fill, api, bearer, seg, types, role, can, when, ago, iso, duration, pretty, short, statusPill, runLink, errorBanner, ApiError, NeedToken, onLeave, route, confirmAction, report, perform, STATUSES });

  window.addEventListener('hashchange', route);
  window.addEventListener('DOMContentLoaded', () => {
    document.getElementById('forget-token').addEventListener('click', () => {
      token.clear();
      forgetCaches();
      route();
    });
    route();
  });
})();
