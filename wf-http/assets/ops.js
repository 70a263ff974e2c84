// wf web view, part 3: operating on many runs and on schedules. The batches page lists the
// batches (`GET /_batches`) with their filter, action and progress, polled every second while
// one runs, cancels one (`POST /_batches/{id}/cancel`) and starts one from a form
// (`POST /_batches`, after counting the runs its filter selects with `GET /_count`). The
// schedules page lists the schedules (`GET /_schedules`) and pauses, unpauses, triggers or
// deletes one (`POST /_schedules/{id}/{action}`, `DELETE /_schedules/{id}`). Controls only
// for a token whose role may use them (admin), each action confirmed in the page first. The
// limits page lists the store's flow limits with what each binds now
// (`GET /_flow_limits/usage`: attempts running and waiting, a rate's tokens), and its queues
// of workflow starts (`GET /_workflow_queues/usage`: settings, runs waiting and running, a
// rate's tokens), refreshed every few seconds; they are changed with `wf queues` or
// `POST /_flow_limits` / `POST /_workflow_queues`.
'use strict';

(() => {
  const { el, fill, api, seg, types, role, can, when, iso, duration, statusPill, runLink, perform, report, NeedToken, STATUSES } = window.wfui;
  const BATCH_POLL_MS = 1000;
  const SCHEDULE_POLL_MS = 5000;
  const BATCH_ACTIONS = ['terminate', 'cancel', 'signal', 'reset', 'pause', 'unpause', 'delete'];
  const SEARCH_KINDS = { keyword: 'Keyword', int: 'Int', float: 'Float', bool: 'Bool', datetime: 'Datetime' };

  /** `ContinuedAsNew` -> `continued_as_new` (older servers answered a filter's status so). */
  const snake = (s) => String(s).replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();

  /** A search value as the list filters read it (`KIND:VALUE`, or loosely: `true`, `42`,
   * `1.5`, `"quoted"`, any other text a keyword), in the JSON shape of a batch's filter. */
  function searchValue(text) {
    const typed = /^(keyword|int|float|bool|datetime):([\s\S]*)$/.exec(text);
    if (typed) {
      const [, kind, rest] = typed;
      const bad = () => { throw new Error(JSON.stringify(rest) + ' is not a ' + kind + ' value'); };
      if (kind === 'keyword') return { Keyword: rest };
      if (kind === 'bool') return rest === 'true' || rest === 'false' ? { Bool: rest === 'true' } : bad();
      if (kind === 'float') return rest.trim() !== '' && isFinite(Number(rest)) ? { Float: Number(rest) } : bad();
      return /^[+-]?\d+$/.test(rest) ? { [SEARCH_KINDS[kind]]: Number(rest) } : bad();
    }
    if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) return { Keyword: text.slice(1, -1) };
    if (text === 'true' || text === 'false') return { Bool: text === 'true' };
    if (/^[+-]?\d+$/.test(text)) return { Int: Number(text) };
    if (text.includes('.') && text.trim() !== '' && isFinite(Number(text))) return { Float: Number(text) };
    return { Keyword: text };
  }

  /** `customer=acme, tier=int:2` as `[key, text]` pairs. */
  function searchPairs(text) {
    return text.split(',').map((p) => p.trim()).filter(Boolean).map((p) => {
      const at = p.indexOf('=');
      if (at < 1) throw new Error('search must be KEY=VALUE (comma-separated), not ' + JSON.stringify(p));
      return [p.slice(0, at).trim(), p.slice(at + 1).trim()];
    });
  }

  /** A batch's filter (`BatchFilterBody`) as one line of text. */
  function filterText(f) {
    const parts = [];
    if (f.workflow_type) parts.push('type ' + f.workflow_type);
    if (f.status) parts.push('status ' + snake(f.status).replace(/_/g, ' '));
    if (f.build_id) parts.push('build ' + f.build_id);
    for (const [k, v] of f.search || []) {
      const [kindName] = Object.keys(v || {});
      const value = v ? v[kindName] : v;
      parts.push(k + ' = ' + (kindName === 'Keyword' ? JSON.stringify(value) : kindName === 'Datetime' ? iso(value) : String(value)));
    }
    if (f.started_after_ms != null) parts.push('started after ' + iso(f.started_after_ms));
    if (f.started_before_ms != null) parts.push('started before ' + iso(f.started_before_ms));
    if (f.closed_after_ms != null) parts.push('closed after ' + iso(f.closed_after_ms));
    if (f.closed_before_ms != null) parts.push('closed before ' + iso(f.closed_before_ms));
    if (f.latest_only) parts.push('latest runs only');
    return parts.length ? parts.join(' · ') : 'every run';
  }

  const actionText = (b) => (b.action === 'signal' ? 'signal ' + b.signal
    : b.action === 'reset' ? 'reset to ' + (b.to || 'last-good-task') : b.action);

  /** Runs `fn` (which draws the page and answers whether to go on) now and every `every` ms
   * while it answers true, until another page replaces this one. A failure of the first run
   * fails the page; a later one goes to `onError`, and the polling goes on. */
  function poller(fn, every, onError) {
    let timer = null;
    let stopped = false;
    let first = true;
    window.wfui.onLeave(() => {
      stopped = true;
      clearTimeout(timer);
      document.getElementById('live').hidden = true;
    });
    return {
      stopped: () => stopped,
      /** Runs `fn` now, then again after `every` ms while it answers true. */
      async now() {
        clearTimeout(timer);
        if (stopped) return;
        let again = false;
        const wasFirst = first;
        first = false;
        try {
          again = await fn();
        } catch (e) {
          if (e instanceof NeedToken) {
            stopped = true;
            window.wfui.route();
            return;
          }
          if (wasFirst) throw e;
          onError(e);
          again = true;
        }
        document.getElementById('live').hidden = !again || stopped;
        if (again && !stopped) timer = setTimeout(() => this.now(), every);
      },
    };
  }

  // ---- Batches ----

  /** The form that starts a batch: action, filter, rate; the reason is asked on confirmation,
   * with the count of runs the filter selects now. */
  function batchForm(known, box, started) {
    const action = el('select', { name: 'action' }, BATCH_ACTIONS.map((a) => el('option', { value: a, text: a })));
    const signal = el('input', { name: 'signal', placeholder: 'signal name', autocomplete: 'off' });
    const args = el('input', { name: 'args', class: 'mono', placeholder: '[ ]  arguments as a JSON array', autocomplete: 'off' });
    const signalFields = el('div', { class: 'row', hidden: true }, el('label', {}, 'Signal', signal), el('label', {}, 'Arguments', args));
    const to = el('select', { name: 'to' }, ['last-good-task', 'first-task'].map((p) => el('option', { value: p, text: p })));
    const drop = el('input', { type: 'checkbox', name: 'drop_messages' });
    const resetFields = el('div', { class: 'row', hidden: true }, el('label', {}, 'Reset to', to), el('label', {}, drop, ' drop later messages'));
    action.addEventListener('change', () => {
      signalFields.hidden = action.value !== 'signal';
      resetFields.hidden = action.value !== 'reset';
    });
    const type = el('select', { name: 'type' }, el('option', { value: '', text: 'all types' }), [...known.keys()].map((n) => el('option', { value: n, text: n })));
    const status = el('select', { name: 'status' }, el('option', { value: '', text: 'any status' }),
      STATUSES.map((s) => el('option', { value: s, text: s.replace(/_/g, ' ') })));
    const search = el('input', { name: 'search', placeholder: 'key=value, …', autocomplete: 'off' });
    const latest = el('input', { type: 'checkbox', name: 'latest' });
    const rate = el('input', { name: 'rate', type: 'number', min: '1', placeholder: 'no limit', class: 'mono' });
    const submit = el('button', { type: 'submit', class: 'danger', text: 'Start batch…' });

    async function start(ev) {
      ev.preventDefault();
      let body;
      let count;
      try {
        const pairs = searchPairs(search.value);
        const filter = { latest_only: latest.checked, search: pairs.map(([k, v]) => [k, searchValue(v)]) };
        if (type.value) filter.workflow_type = type.value;
        if (status.value) filter.status = status.value;
        body = { action: action.value, filter };
        if (action.value === 'signal') {
          if (!signal.value.trim()) throw new Error('a signal batch needs the signal’s name');
          body.signal = signal.value.trim();
          const parsed = args.value.trim() ? JSON.parse(args.value) : [];
          if (!Array.isArray(parsed)) throw new Error('the signal’s arguments are a JSON array');
          body.args = parsed;
        }
        if (action.value === 'reset') {
          body.to = to.value;
          body.drop_messages = drop.checked;
        }
        if (rate.value.trim()) body.rate = Number(rate.value);
        const q = new URLSearchParams({ latest: String(latest.checked) });
        if (type.value) q.set('type', type.value);
        if (status.value) q.set('status', status.value);
        for (const [k, v] of pairs) q.append('search', k + '=' + v);
        count = (await api('GET', '_count?' + q)).data.count;
      } catch (e) {
        if (e instanceof NeedToken) window.wfui.route();
        else report(box, false, e instanceof Error ? e.message : String(e));
        return;
      }
      const what = actionText(body);
      await perform(box, submit, {
        title: what.charAt(0).toUpperCase() + what.slice(1) + ' ' + count + ' run' + (count === 1 ? '' : 's') + '?',
        text: [el('p', { text: 'A batch will ' + what + ' every run this filter selects: ' + filterText(body.filter) + '.' }),
          el('p', { id: 'confirm-count', 'data-count': count, text: count + ' run' + (count === 1 ? ' is' : 's are') + ' selected now; runs started later are not.' })],
        action: 'Start batch', danger: ['terminate', 'delete', 'cancel', 'reset'].includes(body.action),
      }, async (a) => {
        body.reason = a.reason || what + ' from the web view';
        const { data } = await api('POST', '_batches', body);
        started();
        return ['Batch ', el('code', { id: 'started-batch', text: data.batch_id }), ' started: ' + data.selected + ' run' + (data.selected === 1 ? '' : 's') + ' selected.'];
      });
    }

    return el('div', { class: 'panel', id: 'new-batch' }, el('h2', { text: 'Start a batch' }),
      el('form', { id: 'batch-form', class: 'handler', onsubmit: start },
        el('div', { class: 'row' }, el('label', {}, 'Action', action), signalFields, resetFields),
        el('div', { class: 'filters' }, el('label', {}, 'Type', type), el('label', {}, 'Status', status),
          el('label', {}, 'Search attributes', search),
          el('label', { class: 'check', title: 'Only the latest run of each workflow id' }, latest, 'latest runs only'),
          el('label', {}, 'Runs per second', rate)),
        el('div', { class: 'row' }, submit, el('span', { class: 'muted', text: 'Asks for a reason and shows how many runs the filter selects before anything happens.' }))));
  }

  function batchRow(b, admin, box, reload) {
    const total = b.selected;
    const settled = b.done + b.failed;
    const cancel = admin && b.status === 'running' ? el('button', {
      type: 'button', class: 'small ghost', 'data-cancel-batch': b.batch_id, text: 'Cancel',
      onclick: (ev) => perform(box, ev.currentTarget, {
        title: 'Cancel batch ' + b.batch_id + '?',
        text: 'The batch stops; the runs it acted on so far (' + settled + ' of ' + total + ') stay acted on.',
        action: 'Cancel batch', reason: false,
      }, async () => {
        const { data } = await api('POST', '_batches/' + seg(b.batch_id) + '/cancel');
        reload();
        return 'Batch ' + data.batch_id + ' is ' + data.status + ' after ' + data.done + ' of ' + data.selected + ' runs.';
      }),
    }) : null;
    return el('tr', { 'data-batch-id': b.batch_id, 'data-status': b.status, 'data-done': b.done, 'data-failed': b.failed, 'data-selected': b.selected },
      el('td', { class: 'id', text: b.batch_id }),
      el('td', { text: actionText(b) }),
      el('td', { class: 'filter', text: filterText(b.filter) }),
      el('td', {}, statusPill(b.status)),
      el('td', { class: 'progress' },
        el('progress', { max: Math.max(total, 1), value: total ? settled : 1 }),
        el('div', { text: b.done + ' / ' + total + ' done' + (b.failed ? ' · ' + b.failed + ' failed' : '') }),
        b.last_error ? el('div', { class: 'k-fail', text: b.last_error }) : null),
      el('td', {}, when(b.created_ms), b.closed_ms ? el('div', { class: 'muted', text: 'took ' + duration(b.closed_ms - b.created_ms) }) : null),
      el('td', {}, b.reason ? el('span', { text: b.reason }) : el('span', { class: 'muted', text: '—' }), b.rate ? el('div', { class: 'muted', text: 'at most ' + b.rate + '/s' }) : null),
      el('td', {}, cancel));
  }

  wfui.renderBatches = async (main) => {
    document.title = 'wf · batches';
    const [known, myRole] = await Promise.all([types(), role()]);
    const admin = can(myRole, 'admin');
    const box = el('div', { class: 'outcome', id: 'batch-outcome' });
    const list = el('div', { id: 'batch-list' });
    const poll = poller(async () => {
      const { data } = await api('GET', '_batches');
      if (poll.stopped()) return false;
      fill(list, data.length
        ? el('table', { id: 'batches' },
          el('thead', {}, el('tr', {}, ['Batch', 'Action', 'Filter', 'Status', 'Progress', 'Started', 'Reason', ''].map((h) => el('th', { text: h })))),
          el('tbody', {}, data.map((b) => batchRow(b, admin, box, () => poll.now()))))
        : el('p', { class: 'muted', id: 'batches-empty', text: 'No batches yet.' }));
      return data.some((b) => b.status === 'running');
    }, BATCH_POLL_MS, (e) => report(box, false, 'refreshing the list: ' + e.message));
    fill(main,
      el('div', { class: 'panel' },
        el('div', { class: 'run-head' }, el('h1', { text: 'Batches' })),
        el('p', { class: 'muted', text: 'One action on every run a filter selects, carried out in the background by the engines on the store; progress updates while a batch runs.' }),
        box, list),
      admin ? batchForm(known, box, () => poll.now()) : el('p', { class: 'muted panel', id: 'role-note', text: 'This token has the ' + myRole + ' role: starting and cancelling batches need an admin token.' }));
    await poll.now();
  };

  // ---- Schedules ----

  /** `{secs, nanos}` (a Rust `Duration` in JSON) in ms. */
  const ms = (d) => (d ? d.secs * 1000 + Math.round(d.nanos / 1e6) : 0);
  const list2 = (xs, pad) => xs.map((x) => (pad ? String(x).padStart(2, '0') : String(x))).join(',');

  /** When a schedule fires, as text. */
  function specText(spec) {
    const parts = (spec.intervals || []).map((i) => 'every ' + duration(ms(i.every)) + (ms(i.offset) ? ' at +' + duration(ms(i.offset)) : ''));
    for (const c of spec.calendars || []) {
      const bits = [];
      bits.push('at ' + (c.hour.length ? list2(c.hour, true) : '*') + ':' + (c.minute.length ? list2(c.minute, true) : '*') + ' UTC');
      if (c.day_of_month.length) bits.push('on day ' + list2(c.day_of_month));
      if (c.month.length) bits.push('in month ' + list2(c.month));
      if (c.day_of_week.length) bits.push('on weekday ' + list2(c.day_of_week) + ' (Sunday = 0)');
      parts.push(bits.join(' '));
    }
    return parts.length ? parts.join('; ') : 'never (no interval or calendar)';
  }

  function scheduleRow(s, admin, box, reload) {
    const path = '_schedules/' + seg(s.schedule_id);
    const act = (name, cls, text, ask, work) => el('button', {
      type: 'button', class: 'small ' + cls, 'data-schedule-action': name, text,
      onclick: (ev) => perform(box, ev.currentTarget, ask, async (a) => {
        try {
          return await work(a);
        } finally {
          reload();
        }
      }),
    });
    const buttons = admin ? [
      s.paused
        ? act('unpause', '', 'Unpause', { title: 'Unpause schedule ' + s.schedule_id + '?', text: 'It fires again at its next time (fire times missed while paused are not made up).', action: 'Unpause', reasonHint: 'a note for operators (optional)' },
          async (a) => { await api('POST', path + '/unpause', { note: a.reason }); return 'Schedule ' + s.schedule_id + ' unpaused.'; })
        : act('pause', 'ghost', 'Pause', { title: 'Pause schedule ' + s.schedule_id + '?', text: 'It starts nothing until unpaused; runs it started go on.', action: 'Pause', reasonHint: 'a note for operators (optional)' },
          async (a) => { await api('POST', path + '/pause', { note: a.reason }); return 'Schedule ' + s.schedule_id + ' paused.'; }),
      act('trigger', 'ghost', 'Trigger', { title: 'Trigger schedule ' + s.schedule_id + ' now?', text: 'It starts its action once now, as its overlap policy allows, besides its fire times.', action: 'Trigger', reason: false },
        async () => { await api('POST', path + '/trigger'); return 'Schedule ' + s.schedule_id + ' triggered.'; }),
      act('delete', 'danger', 'Delete', { title: 'Delete schedule ' + s.schedule_id + '?', text: 'It fires no more; the runs it started are left as they are.', action: 'Delete schedule', danger: true, reason: false },
        async () => { await api('DELETE', path); return 'Schedule ' + s.schedule_id + ' deleted.'; }),
    ] : null;
    const last = s.recent_actions.length ? s.recent_actions[s.recent_actions.length - 1] : null;
    const type = s.action.workflow_type;
    return el('tr', { 'data-schedule-id': s.schedule_id, 'data-paused': String(s.paused) },
      el('td', { class: 'id', text: s.schedule_id }),
      el('td', { text: specText(s.spec) }),
      el('td', {}, el('span', { class: 'chip', text: type }), el('span', { class: 'mono', text: s.action.workflow_id_prefix + '-…' })),
      el('td', {}, s.paused ? el('span', { class: 'status s-paused', text: 'paused' }) : el('span', { class: 'status s-running', text: 'active' }),
        s.note ? el('div', { class: 'muted note', text: s.note }) : null,
        s.last_error ? el('div', { class: 'k-fail', text: s.last_error }) : null),
      el('td', {}, s.paused || !s.next_fires_ms.length ? el('span', { class: 'muted', text: '—' }) : when(s.next_fires_ms[0])),
      el('td', {}, last ? [runLink(type, last.workflow_id), el('div', { class: 'muted' }, when(last.fire_ms))] : el('span', { class: 'muted', text: 'none yet' }),
        s.running.length ? el('div', {}, 'running: ', s.running.map((id) => [runLink(type, id), ' '])) : null,
        s.skipped || s.buffered ? el('div', { class: 'muted', text: s.skipped + ' skipped · ' + s.buffered + ' buffered' }) : null),
      el('td', {}, el('div', { class: 'row' }, buttons)));
  }

  // ---- Flow limits ----

  /** A limit's scope as `wf queues` writes it. */
  const scopeText = (scope) => (scope.activity != null ? 'activity:' + scope.activity
    : scope.task_queue != null ? 'task-queue:' + scope.task_queue : 'key:' + scope.key);

  /** What a limit allows, for people. */
  function ruleText(u) {
    if (u.concurrency != null) return 'at most ' + u.concurrency + ' at once';
    const r = u.rate;
    return 'at most ' + r.limit + ' per ' + duration(r.period_ms) + ', burst ' + (r.burst != null ? r.burst : r.limit);
  }

  function limitRow(u) {
    const kind = u.concurrency != null ? 'concurrency' : 'rate';
    const full = u.concurrency != null ? u.running >= u.concurrency : (u.tokens || 0) === 0;
    return el('tr', { 'data-limit': scopeText(u.scope) + '/' + kind },
      el('td', { class: 'id', text: scopeText(u.scope) }),
      el('td', { text: kind }),
      el('td', { text: ruleText(u) }),
      el('td', { class: 'num', 'data-running': String(u.running), text: String(u.running) }),
      el('td', { class: 'num', 'data-waiting': String(u.waiting), text: String(u.waiting) }),
      el('td', { class: 'num', text: u.tokens != null ? String(u.tokens) : '—' }),
      el('td', {}, full && u.waiting > 0
        ? el('span', { class: 'status s-paused', text: 'holding back' })
        : el('span', { class: 'status s-running', text: 'has room' })));
  }

  /** A queue of workflow starts' settings, for people. */
  function queueSettings(q) {
    const parts = [];
    if (q.concurrency != null) parts.push('at most ' + q.concurrency + ' at once');
    if (q.rate != null) parts.push('at most ' + q.rate.limit + ' per ' + duration(q.rate.period_ms));
    if (!q.configured) return 'no settings (admits every start at once)';
    return parts.length ? parts.join(', ') : 'no limits';
  }

  function queueRow(q) {
    const full = (q.concurrency != null && q.running >= q.concurrency) || (q.rate != null && (q.tokens || 0) === 0);
    return el('tr', { 'data-queue': q.name },
      el('td', { class: 'id', text: 'queue:' + q.name }),
      el('td', { text: queueSettings(q) }),
      el('td', { class: 'num', 'data-running': String(q.running), text: String(q.running) }),
      el('td', { class: 'num', 'data-waiting': String(q.waiting), text: String(q.waiting) }),
      el('td', { class: 'num', text: q.tokens != null ? String(q.tokens) : '—' }),
      el('td', {}, full && q.waiting > 0
        ? el('span', { class: 'status s-paused', text: 'holding back' })
        : el('span', { class: 'status s-running', text: 'has room' })));
  }

  wfui.renderLimits = async (main) => {
    document.title = 'wf · limits';
    const box = el('div', { class: 'outcome', id: 'limit-outcome' });
    const list = el('div', { id: 'limit-list' });
    const queues = el('div', { id: 'queue-list' });
    const poll = poller(async () => {
      const [limits, starts] = await Promise.all([api('GET', '_flow_limits/usage'), api('GET', '_workflow_queues/usage')]);
      if (poll.stopped()) return false;
      fill(list, limits.data.length
        ? el('table', { id: 'limits' },
          el('thead', {}, el('tr', {}, ['Scope', 'Kind', 'Limit', 'Running', 'Waiting', 'Tokens', ''].map((h) => el('th', { text: h })))),
          el('tbody', {}, limits.data.map(limitRow)))
        : el('p', { class: 'muted', id: 'limits-empty', text: 'No flow limits.' }));
      fill(queues, starts.data.length
        ? el('table', { id: 'queues' },
          el('thead', {}, el('tr', {}, ['Queue', 'Settings', 'Running', 'Waiting', 'Tokens', ''].map((h) => el('th', { text: h })))),
          el('tbody', {}, starts.data.map(queueRow)))
        : el('p', { class: 'muted', id: 'queues-empty', text: 'No queues of workflow starts.' }));
      return true;
    }, SCHEDULE_POLL_MS, (e) => report(box, false, 'refreshing the list: ' + e.message));
    fill(main,
      el('div', { class: 'panel' },
        el('div', { class: 'run-head' }, el('h1', { text: 'Flow limits' })),
        el('p', { class: 'muted', text: 'The limits the store holds on activity attempts, over every engine: the attempts each covers running and waiting, a rate limit\'s tokens. Change them with wf queues set-limit or POST /_flow_limits. The lists refresh every few seconds.' }),
        box, list),
      el('div', { class: 'panel' },
        el('div', { class: 'run-head' }, el('h2', { text: 'Queues of workflow starts' })),
        el('p', { class: 'muted', text: 'Each queue with settings or with runs on it, over every engine: its admitted runs still running, its runs held waiting for room, its rate\'s tokens. Change them with wf queues set-limit queue:NAME or POST /_workflow_queues.' }),
        queues));
    await poll.now();
  };

  wfui.renderSchedules = async (main) => {
    document.title = 'wf · schedules';
    const myRole = await role();
    const admin = can(myRole, 'admin');
    const box = el('div', { class: 'outcome', id: 'schedule-outcome' });
    const list = el('div', { id: 'schedule-list' });
    const poll = poller(async () => {
      const { data } = await api('GET', '_schedules');
      if (poll.stopped()) return false;
      data.sort((a, b) => (a.schedule_id < b.schedule_id ? -1 : a.schedule_id > b.schedule_id ? 1 : 0));
      fill(list, data.length
        ? el('table', { id: 'schedules' },
          el('thead', {}, el('tr', {}, ['Schedule', 'Fires', 'Starts', 'State', 'Next', 'Last action', ''].map((h) => el('th', { text: h })))),
          el('tbody', {}, data.map((s) => scheduleRow(s, admin, box, () => poll.now()))))
        : el('p', { class: 'muted', id: 'schedules-empty', text: 'No schedules.' }));
      return true;
    }, SCHEDULE_POLL_MS, (e) => report(box, false, 'refreshing the list: ' + e.message));
    fill(main,
      el('div', { class: 'panel' },
        el('div', { class: 'run-head' }, el('h1', { text: 'Schedules' })),
        el('p', { class: 'muted', text: 'Each schedule starts a workflow at its times. The list refreshes every few seconds.' }),
        box, list),
      admin ? null : el('p', { class: 'muted panel', id: 'role-note', text: 'This token has the ' + myRole + ' role: pausing, unpausing, triggering and deleting schedules need an admin token.' }));
    await poll.now();
  };
})();
