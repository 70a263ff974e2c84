// wf web view, part 2: the run page. Status and facts (a pause and a repair with who and
// why), input and result, the history as a timeline grouped by workflow task (with "state
// here" on each event and "reset to here" on each task), activities and timers, pending
// work, parent and children, query buttons, signal and update forms built from the type's
// handlers, the run's streams followed live (streams.js), and cancel, terminate, pause,
// unpause and resume buttons: each control only for a token whose role may use it, each
// action confirmed in the page first. Refreshes itself every 2 s while the run is running.
'use strict';

(() => {
  const { el, fill, api, seg, types, role, can, when, iso, duration, pretty, short, statusPill, runLink, errorBanner, NeedToken, perform } = window.wfui;
  const HISTORY_CAP = 20000;
  const REFRESH_MS = 2000;

  const TERMINAL = {
    WorkflowCompleted: 'completed', WorkflowFailed: 'failed', ContinuedAsNew: 'continued_as_new',
    WorkflowTerminated: 'terminated', WorkflowCancelled: 'cancelled', WorkflowTimedOut: 'timed_out',
    WorkflowReset: 'reset',
  };

  /** The events of the run after those in `have` (its history, read page by page). */
  async function history(type, id, runId, have) {
    const events = have.slice();
    let from = events.length ? events[events.length - 1].event_id + 1 : 1;
    while (from !== null && events.length < HISTORY_CAP) {
      const q = new URLSearchParams({ from: String(from), limit: '1000' });
      if (runId) q.set('run_id', runId);
      const { data } = await api('GET', seg(type) + '/runs/' + seg(id) + '/history?' + q);
      events.push(...data.events);
      from = data.next;
    }
    return { events, truncated: from !== null };
  }

  /** Search attributes (`{"customer": {"Keyword": "acme"}}`) as chips `customer = "acme"`, set as text. */
  function searchChips(attrs) {
    return Object.entries(attrs || {}).map(([k, v]) => {
      const [kindName, value] = variant(v);
      const shown = kindName === 'Keyword' ? JSON.stringify(value)
        : kindName === 'Datetime' ? iso(value) : String(value);
      return el('span', { class: 'chip', 'data-search-key': k, title: kindName.toLowerCase(), text: k + ' = ' + shown });
    });
  }

  /** The one key of `{"Completed": v}`-style enums. */
  function variant(v) {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const keys = Object.keys(v);
      if (keys.length === 1) return [keys[0], v[keys[0]]];
    }
    return [String(v), undefined];
  }

  function valueBlock(v) {
    return el('pre', { class: 'value', text: pretty(v) });
  }

  /** What the history says about activities, timers, updates and children, by sequence number. */
  function index(events) {
    const ix = { activities: new Map(), timers: new Map(), updates: new Map(), children: new Map(), start: null, end: null };
    for (const e of events) {
      const a = e.attributes || {};
      switch (e.type) {
        case 'WorkflowStarted': ix.start = e; break;
        case 'ActivityScheduled': ix.activities.set(a.seq, { seq: a.seq, name: a.name, scheduled: e, end: null }); break;
        case 'ActivityCompleted': case 'ActivityFailed': case 'ActivityTimedOut': case 'ActivityCancelled': {
          const x = ix.activities.get(a.seq);
          if (x) x.end = e;
          break;
        }
        case 'TimerStarted': ix.timers.set(a.seq, { seq: a.seq, fireAt: a.fire_at_ms, started: e, end: null }); break;
        case 'TimerFired': case 'TimerCancelled': {
          const x = ix.timers.get(a.seq);
          if (x) x.end = e;
          break;
        }
        case 'UpdateAccepted': ix.updates.set(a.update_id, a.name); break;
        case 'ChildWorkflowStarted': ix.children.set(a.seq, { ...a, end: null }); break;
        case 'ChildWorkflowClosed': {
          const x = ix.children.get(a.seq);
          if (x) x.end = a.outcome;
          break;
        }
        default: if (TERMINAL[e.type]) ix.end = e;
      }
    }
    return ix;
  }

  const plural = (n, word) => n + ' ' + word + (n === 1 ? '' : 's');

  /** Where a repaired run came from (`repaired_from`: kind, run, event, who, why), as text
   * with a link to that run. */
  function repairLine(o, type) {
    const what = { reset: 'reset of', fork: 'fork of', resume: 'resume of' }[o.kind] || o.kind + ' of';
    const run = 'run ' + String(o.run_id).slice(0, 8) + '…';
    return [what + ' ', runLink(type, o.workflow_id, o.kind === 'fork' ? o.workflow_id + ' ' + run : run, o.run_id),
      ' at event ' + o.at_event,
      el('span', { class: 'muted', text: ' · by ' + o.identity + (o.reason ? ': ' + o.reason : '') })];
  }
  const chip = (t) => el('span', { class: 'chip', text: t });
  const kind = (cls, t) => el('span', { class: 'kind ' + cls, text: t });
  const argsLine = (v) => (v === undefined || v === null || (Array.isArray(v) && v.length === 0) ? '()' : short(v));

  /** One event as a line of text nodes, and its full attributes to unfold. */
  function describeEvent(e, ix, type) {
    const a = e.attributes || {};
    const act = (seq) => (ix.activities.get(seq) || {}).name || '?';
    switch (e.type) {
      case 'WorkflowStarted':
        return [kind('k-done', 'Started'), chip(a.workflow_type), 'input ', short(a.input),
          a.continued_from ? [' · continues ', runLink(type, ix.workflowId, a.continued_from.slice(0, 8) + '…', a.continued_from)] : null,
          a.parent ? [' · child of ', runLink('_', a.parent.workflow_id)] : null,
          a.repaired_from ? [' · ', repairLine(a.repaired_from, type)] : null];
      case 'SignalReceived':
        return [kind('k-signal', 'Signal'), chip(a.name), argsLine(a.args), a.signal_id ? [' ', chip('id ' + a.signal_id)] : null];
      case 'UpdateAccepted':
        return [kind('k-update', 'Update accepted'), chip(a.name), argsLine(a.args), ' ', chip('id ' + a.update_id)];
      case 'UpdateCompleted': {
        const [k, v] = variant(a.outcome);
        const name = ix.updates.get(a.update_id) || '?';
        return k === 'Failed'
          ? [kind('k-fail', 'Update failed'), chip(name), String(v)]
          : [kind('k-update', 'Update completed'), chip(name), '→ ', short(v)];
      }
      case 'ActivityScheduled': {
        const r = (a.options && a.options.retry) || {};
        return [kind('k-activity', 'Activity scheduled'), chip('#' + a.seq), chip(a.name), argsLine(a.input),
          r.maximum_attempts ? el('span', { class: 'muted', text: ' · at most ' + r.maximum_attempts + ' attempts' }) : null];
      }
      case 'ActivityCompleted':
        return [kind('k-activity', 'Activity completed'), chip('#' + a.seq), chip(act(a.seq)), '→ ', short(a.result),
          el('span', { class: a.attempts > 1 ? 'k-fail' : 'muted', text: ' · attempt ' + a.attempts })];
      case 'ActivityFailed': {
        const f = a.failure || {};
        return [kind('k-fail', 'Activity failed'), chip('#' + a.seq), chip(act(a.seq)), chip(f.kind || 'error'), f.message || '',
          el('span', { class: 'muted', text: ' · after ' + a.attempts + ' attempt' + (a.attempts === 1 ? '' : 's') + (f.non_retryable ? ' · non-retryable' : '') }),
          a.last_heartbeat != null ? el('span', { class: 'muted', text: ' · last heartbeat ' }) : null,
          a.last_heartbeat != null ? short(a.last_heartbeat) : null];
      }
      case 'ActivityTimedOut':
        return [kind('k-fail', 'Activity timed out'), chip('#' + a.seq), chip(act(a.seq)), String(a.timeout),
          el('span', { class: 'muted', text: ' · after ' + a.attempts + ' attempt' + (a.attempts === 1 ? '' : 's') }),
          a.last_heartbeat != null ? el('span', { class: 'muted', text: ' · last heartbeat ' }) : null,
          a.last_heartbeat != null ? short(a.last_heartbeat) : null];
      case 'ActivityCancelled':
        return [kind('k-fail', 'Activity cancelled'), chip('#' + a.seq), chip(act(a.seq))];
      case 'TimerStarted':
        return [kind('k-timer', 'Timer started'), chip('#' + a.seq), 'for ' + duration(a.fire_at_ms - e.time_ms) + ', fires ', when(a.fire_at_ms)];
      case 'TimerFired': {
        const t = ix.timers.get(a.seq);
        return [kind('k-timer', 'Timer fired'), chip('#' + a.seq),
          t ? el('span', { class: 'muted', text: 'set for ' + iso(t.fireAt) + (e.time_ms - t.fireAt > 1000 ? ', ' + duration(e.time_ms - t.fireAt) + ' late' : '') }) : null];
      }
      case 'TimerCancelled':
        return [kind('k-timer', 'Timer cancelled'), chip('#' + a.seq)];
      case 'MarkerRecorded':
        return [kind('', 'Marker'), chip('#' + a.seq), chip(a.name), short(a.value)];
      case 'CancelRequested':
        return [kind('k-fail', 'Cancel requested'), a.reason];
      case 'WorkflowCompleted':
        return [kind('k-done', 'Completed'), '→ ', short(a.result)];
      case 'WorkflowFailed':
        return [kind('k-fail', 'Failed'), a.message];
      case 'ContinuedAsNew':
        return [kind('k-done', 'Continued as new'), runLink(type, ix.workflowId, 'run ' + String(a.new_run_id).slice(0, 8) + '…'), ' input ', short(a.input)];
      case 'WorkflowTerminated':
        return [kind('k-fail', 'Terminated'), a.reason];
      case 'WorkflowCancelled':
        return [kind('k-fail', 'Cancelled'), a.reason];
      case 'WorkflowReset':
        return [kind('k-fail', 'Reset'), 'to run ', runLink(type, ix.workflowId, String(a.new_run_id).slice(0, 8) + '…', a.new_run_id),
          ' from event ' + a.at_event, el('span', { class: 'muted', text: ' · by ' + a.identity + (a.reason ? ': ' + a.reason : '') })];
      case 'WorkflowTimedOut':
        return [kind('k-fail', 'Timed out'), chip(String(a.timeout).toLowerCase() + ' timeout'),
          a.new_run_id ? ['retried as ', runLink(type, ix.workflowId, 'run ' + String(a.new_run_id).slice(0, 8) + '…', a.new_run_id)] : null];
      case 'ChildWorkflowStarted':
        return [kind('k-child', 'Child started'), chip('#' + a.seq), chip(a.workflow_type), runLink(a.workflow_type, a.workflow_id), ' input ', short(a.input)];
      case 'ChildWorkflowClosed': {
        const [k, v] = variant(a.outcome);
        const c = ix.children.get(a.seq);
        return [kind(k === 'Completed' ? 'k-child' : 'k-fail', 'Child ' + k.toLowerCase()), chip('#' + a.seq),
          c ? runLink(c.workflow_type, c.workflow_id) : null, ' ', k === 'Completed' ? '→ ' + short(v) : String(v)];
      }
      case 'ExternalSignalSent':
        return [kind('k-signal', 'Signal sent'), chip('#' + a.seq), 'to ', runLink('_', a.workflow_id), ' ', chip(a.name), argsLine(a.args)];
      case 'ChildCancelRequested':
        return [kind('k-fail', 'Child cancel requested'), chip('#' + a.seq), runLink('_', a.workflow_id)];
      case 'StreamWritten':
        return [kind('k-stream', 'Stream entry'), chip(a.stream), short(a.value)];
      case 'StreamClosed':
        return [kind('k-stream', 'Stream closed'), chip(a.stream)];
      case 'EventSet':
        return [kind('k-stream', 'Event published'), chip(a.key), short(a.value)];
      case 'SearchAttributesUpserted':
        return [kind('', 'Search attributes'), searchChips(a.attributes)];
      case 'LocalActivityCompleted': {
        const [k, v] = variant(a.outcome);
        const attempts = el('span', { class: 'muted', text: ' · local · ' + plural(a.attempts, 'attempt') });
        if (k === 'Completed') return [kind('k-activity', 'Local activity completed'), chip('#' + a.seq), chip(a.name), '→ ', short(v), attempts];
        if (k === 'TimedOut') return [kind('k-fail', 'Local activity timed out'), chip('#' + a.seq), chip(a.name), String(v), attempts];
        const f = (k === 'Backoff' ? (v || {}).failure : v) || {};
        const retry = k === 'Backoff' ? el('span', { class: 'muted', text: ' · retry in ' + duration((v || {}).delay_ms) }) : null;
        return [kind('k-fail', k === 'Backoff' ? 'Local activity retrying' : 'Local activity failed'), chip('#' + a.seq), chip(a.name),
          chip(f.kind || 'error'), f.message || '', attempts, retry];
      }
      default:
        return [kind('', e.type), short(a)];
    }
  }

  /** Events grouped by the workflow task that consumed or issued them. */
  function timeline(events, ix, type, running) {
    const t0 = events.length ? events[0].time_ms : 0;
    const groups = [];
    let cur = [];
    for (const e of events) {
      if (e.type === 'WorkflowTaskCompleted') {
        groups.push({ events: cur, done: e });
        cur = [];
      } else cur.push(e);
    }
    if (cur.length) groups.push({ events: cur, done: null });
    const rows = (list) => list.map((e) => el('div', { class: 'event', 'data-event-type': e.type, 'data-event-id': e.event_id },
      el('span', { class: 'eid', text: String(e.event_id) }),
      el('span', { class: 'when', title: iso(e.time_ms), text: '+' + duration(e.time_ms - t0) }),
      window.wfui.stateHere ? el('button', { type: 'button', class: 'small state-here', 'data-state-here': e.event_id, title: 'Run the queries on the state as of this event (by replay)', text: 'state here',
        onclick: () => window.wfui.stateHere && window.wfui.stateHere(e.event_id) }) : el('span'),
      el('div', { class: 'what' }, describeEvent(e, ix, type),
        e.attributes && Object.keys(e.attributes).length
          ? el('details', {}, el('summary', { text: 'details' }), valueBlock(e.attributes)) : null)));
    return groups.map((g, i) => {
      const a = g.done ? g.done.attributes || {} : {};
      const head = g.done
        ? el('div', { class: 'task-head', 'data-task-event': g.done.event_id }, 'Workflow task ' + (i + 1),
          el('span', { class: 'muted', text: 'completed at +' + duration(g.done.time_ms - t0) + (a.build_id ? ' · build ' + a.build_id : '') + ' · event ' + g.done.event_id }),
          window.wfui.resetHere ? el('button', { type: 'button', class: 'small ghost reset-here', 'data-reset-here': g.done.event_id,
            title: 'Reset the run to this workflow task: a new run goes on from the history up to here, on today’s code', text: 'reset to here',
            onclick: () => window.wfui.resetHere && window.wfui.resetHere(g.done.event_id, i + 1) }) : null)
        : el('div', { class: 'task-head' }, running ? 'Waiting for the next workflow task' : 'After the last task',
          el('span', { class: 'muted', text: g.events.length + ' event' + (g.events.length === 1 ? '' : 's') }));
      return el('section', { class: 'task' + (g.done ? '' : ' open') }, head, rows(g.events));
    });
  }

  function activitiesTable(ix, pending) {
    const pend = new Map((pending || []).map((p) => [p.seq, p]));
    if (!ix.activities.size && !ix.timers.size) return null;
    const rows = [...ix.activities.values()].map((x) => {
      const p = pend.get(x.seq);
      const end = x.end;
      const ea = (end && end.attributes) || {};
      let state; let detail = '';
      if (!end) {
        state = el('span', { class: 'status s-running', text: p ? 'attempt ' + p.attempt : 'scheduled' });
        if (p && p.last_failure) detail = 'last failure: ' + p.last_failure;
      } else if (end.type === 'ActivityCompleted') {
        state = el('span', { class: 'status s-completed', text: 'completed' });
        detail = ea.attempts > 1 ? 'succeeded on attempt ' + ea.attempts : '';
      } else if (end.type === 'ActivityFailed') {
        state = el('span', { class: 'status s-failed', text: 'failed' });
        detail = (ea.failure ? ea.failure.kind + ': ' + ea.failure.message : '') + ' (' + plural(ea.attempts, 'attempt') + ')';
      } else if (end.type === 'ActivityTimedOut') {
        state = el('span', { class: 'status s-failed', text: 'timed out' });
        detail = ea.timeout + ' (' + plural(ea.attempts, 'attempt') + ')';
      } else state = el('span', { class: 'status s-cancelled', text: 'cancelled' });
      return el('tr', { 'data-activity-seq': x.seq }, el('td', { text: '#' + x.seq }), el('td', { class: 'id', text: x.name }), el('td', {}, state),
        el('td', { text: end ? duration(end.time_ms - x.scheduled.time_ms) : '' }), el('td', { text: detail }));
    });
    const timers = [...ix.timers.values()].map((t) => el('tr', {},
      el('td', { text: '#' + t.seq }), el('td', { text: 'timer' }),
      el('td', {}, el('span', { class: 'status ' + (t.end ? (t.end.type === 'TimerFired' ? 's-completed' : 's-cancelled') : 's-running'),
        text: t.end ? (t.end.type === 'TimerFired' ? 'fired' : 'cancelled') : 'waiting' })),
      el('td', { text: duration(t.fireAt - t.started.time_ms) }),
      el('td', {}, 'fires at ', when(t.fireAt))));
    return el('table', { id: 'activities' },
      el('thead', {}, el('tr', {}, ['', 'Activity / timer', 'State', 'Took / length', ''].map((h) => el('th', { text: h })))),
      el('tbody', {}, rows, timers));
  }

  /** What each part of a running run waits on: `run` and every live handler, with each wait's source line. */
  function blockedPanel(d) {
    const parts = d.blocked_on || [];
    if (!parts.length) return null;
    const wait = (w) => el('li', { 'data-wait-kind': w.kind }, kind('', w.kind), w.name ? chip(w.name) : null,
      w.attempt ? 'attempt ' + w.attempt + ' ' : null,
      w.location ? el('code', { class: 'location', text: w.location.file + ':' + w.location.line + ':' + w.location.column }) : null,
      w.deadline_ms ? [' ' + (w.kind === 'timer' ? 'fires ' : 'until '), when(w.deadline_ms)] : null);
    const items = parts.map((p) => el('li', { 'data-part': p.part }, chip(p.part),
      p.waits.length ? el('ul', { class: 'plain' }, p.waits.map(wait)) : el('span', { class: 'muted', text: ' on a future of its own' })));
    return el('div', { class: 'panel', id: 'blocked' }, el('h2', { text: 'Blocked on' }), el('ul', { class: 'plain' }, items));
  }

  function pendingPanel(d) {
    const items = [];
    for (const p of d.pending_activities || []) {
      items.push(el('li', {}, chip('#' + p.seq), chip(p.name), 'attempt ' + p.attempt,
        p.last_failure ? el('div', { class: 'k-fail', text: 'last failure: ' + p.last_failure }) : null,
        p.heartbeat_details !== null && p.heartbeat_details !== undefined ? el('div', { class: 'muted', text: 'heartbeat: ' + short(p.heartbeat_details) }) : null));
    }
    for (const u of d.pending_updates || []) {
      items.push(el('li', {}, kind('k-update', 'Update'), chip(u.name), chip('id ' + u.update_id), u.accepted ? 'running' : 'waiting for its validator'));
    }
    for (const s of d.buffered_signals || []) items.push(el('li', {}, kind('k-signal', 'Signal without handler'), chip(s)));
    for (const h of d.running_handlers || []) items.push(el('li', {}, kind('', 'Handler running'), chip(h)));
    if (!items.length) return null;
    return el('div', { class: 'panel', id: 'pending' }, el('h2', { text: 'Pending' }), el('ul', { class: 'plain' }, items));
  }

  // ---- Forms from handler metadata ----

  const STRINGS = new Set(['String', '&str', 'str', '&String', "&'staticstr", 'Box<str>', 'Arc<str>', 'Rc<str>']);
  const isString = (t) => STRINGS.has(String(t).replace(/\s+/g, '')) || /^Cow<.*str>$/.test(String(t).replace(/\s+/g, ''));
  function hint(t) {
    const s = String(t).replace(/\s+/g, '');
    if (isString(s)) return 'text';
    if (/^&?[iu](8|16|32|64|128|size)$/.test(s)) return '0';
    if (/^&?f(32|64)$/.test(s)) return '0.5';
    if (s === 'bool' || s === '&bool') return 'true';
    if (/^&?(Vec<|\[|&\[|HashSet<|BTreeSet<)/.test(s)) return '[ ]  (JSON)';
    if (/^Option</.test(s)) return 'null, or a value as JSON';
    return 'JSON';
  }
  function parseArg(p, raw) {
    if (isString(p.type)) return raw;
    if (raw.trim() === '') {
      if (/^Option</.test(String(p.type).replace(/\s+/g, ''))) return null;
      throw new Error(p.name + ' (' + p.type + ') is empty: enter a value as JSON');
    }
    try {
      return JSON.parse(raw);
    } catch (e) {
      throw new Error(p.name + ' (' + p.type + ') is not valid JSON: ' + e.message);
    }
  }

  /** Inputs for `handler`'s parameters and a way to read them as `{name: value}`. */
  function paramInputs(handler) {
    const inputs = handler.params.map((p) => {
      const input = el('input', { name: p.name, class: isString(p.type) ? '' : 'mono', placeholder: hint(p.type), autocomplete: 'off' });
      return { p, input, label: el('label', {}, el('span', {}, p.name, ' ', el('span', { class: 'chip', text: p.type })), input) };
    });
    const read = () => Object.fromEntries(inputs.map(({ p, input }) => [p.name, parseArg(p, input.value)]));
    return { nodes: inputs.map((x) => x.label), read };
  }

  function outcome(box, ok, v) {
    box.className = 'outcome ' + (ok ? 'ok' : 'error');
    fill(box, el('pre', { text: typeof v === 'string' && !ok ? v : pretty(v) }));
  }

  function errorText(e) {
    return e instanceof Error ? e.message : String(e);
  }

  function queriesPanel(meta, base) {
    if (!meta.queries.length) return null;
    // Blank: the current state; an event id: the state as of that event, by replay.
    const atEvent = el('input', { id: 'at-event', type: 'number', min: '1', placeholder: 'now', class: 'mono', autocomplete: 'off' });
    const forms = meta.queries.map((q) => {
      const { nodes, read } = paramInputs(q);
      const box = el('div', { class: 'outcome', 'data-query-result': q.name });
      const form = el('form', {
        class: 'handler', 'data-query': q.name,
        onsubmit: async (ev) => {
          ev.preventDefault();
          try {
            const at = atEvent.value.trim();
            const { data } = await api('POST', base + '/query' + (at ? '?at_event=' + encodeURIComponent(at) : ''), { name: q.name, args: read() });
            outcome(box, true, data.value);
          } catch (e) {
            if (e instanceof NeedToken) window.wfui.route();
            else outcome(box, false, errorText(e));
          }
        },
      }, el('div', { class: 'row' }, el('button', { type: 'submit', class: 'small', text: 'Run ' + q.name }),
        el('span', { class: 'muted', text: '→ ' + q.returns })),
      nodes.length ? el('div', { class: 'params' }, nodes) : null, box);
      return form;
    });
    // "state here" on an event of the timeline: answer the queries without parameters as of it.
    window.wfui.stateHere = (eventId) => {
      atEvent.value = String(eventId);
      for (const f of forms) if (!f.querySelector('.params')) f.requestSubmit();
      document.getElementById('queries')?.scrollIntoView({ block: 'nearest' });
    };
    return el('div', { class: 'panel', id: 'queries' }, el('h2', { text: 'Queries' }),
      el('p', { class: 'muted', text: 'Run the workflow’s query handlers on its current state (finished runs too), or as of an event of its history.' }),
      el('label', { class: 'row' }, el('span', { text: 'As of event ' }), atEvent), forms);
  }

  /** A form for the signals or updates of `meta`: pick one, fill its parameters, send. */
  function messageForm(kindName, handlers, send) {
    if (!handlers.length) return null;
    const select = el('select', { name: kindName }, handlers.map((h) => el('option', { value: h.name, text: h.name })));
    const params = el('div', { class: 'params' });
    const idInput = el('input', { name: kindName + '_id', placeholder: 'optional dedupe id', autocomplete: 'off' });
    const box = el('div', { class: 'outcome', id: kindName + '-outcome' });
    let reader = () => ({});
    const pick = () => {
      const h = handlers.find((x) => x.name === select.value);
      const { nodes, read } = paramInputs(h);
      reader = read;
      fill(params, nodes.length ? nodes : el('span', { class: 'muted', text: 'no parameters' }));
    };
    select.addEventListener('change', pick);
    pick();
    const button = el('button', { type: 'submit', text: kindName === 'signal' ? 'Send signal' : 'Send update' });
    const form = el('form', {
      class: 'handler', id: kindName + '-form',
      onsubmit: async (ev) => {
        ev.preventDefault();
        let args;
        try {
          args = reader();
        } catch (e) {
          outcome(box, false, errorText(e));
          return;
        }
        button.disabled = true;
        try {
          outcome(box, true, await send(select.value, args, idInput.value.trim() || undefined));
        } catch (e) {
          if (e instanceof NeedToken) window.wfui.route();
          else outcome(box, false, errorText(e));
        } finally {
          button.disabled = false;
        }
      },
    }, el('label', {}, kindName === 'signal' ? 'Signal' : 'Update', select), params, el('label', {}, 'Id', idInput), el('div', { class: 'row' }, button), box);
    return el('div', { class: 'panel', id: kindName + 's' }, el('h2', { text: kindName === 'signal' ? 'Send a signal' : 'Send an update' }), form);
  }

  /** Closed runs that a resume continues from their last good workflow task. */
  const RESUMABLE = new Set(['failed', 'timed_out', 'cancelled', 'terminated']);

  /** The run's operations, each for the roles that may use it and confirmed in the page
   * first: cancel (write), pause, unpause, terminate and resume (admin). Results go to `box`.
   * `update(desc, status)` shows the ones that apply to the run as it now stands. */
  function controlPanel(type, base, id, myRole, box, refresh) {
    if (!can(myRole, 'write')) return null;
    const admin = can(myRole, 'admin');
    const call = (path, body, shown) => async (a) => {
      try {
        await api('POST', base + '/' + path, body ? body(a) : undefined);
      } finally {
        setTimeout(refresh, 300);
      }
      return shown;
    };
    // `ask`: the dialog's contents, or a function that makes them when the button is clicked.
    const button = (bid, cls, text, title, ask, work) => el('button', {
      type: 'button', id: bid, class: cls, text, title,
      onclick: (ev) => perform(box, ev.currentTarget, typeof ask === 'function' ? ask() : ask, work),
    });
    const cancel = button('cancel-run', 'ghost', 'Cancel run', 'Ask the run to cancel: its code sees the request and may clean up',
      { title: 'Cancel ' + id + '?', text: 'The run’s code sees a cancellation request and may clean up before it ends.', action: 'Request cancellation' },
      call('cancel', (a) => ({ reason: a.reason || 'cancelled from the web view' }), 'Cancellation requested.'));
    const pause = admin ? button('pause-run', 'ghost', 'Pause run', 'Hold the run where it is (an operator’s pause)',
      { title: 'Pause ' + id + '?', text: 'The run gets no workflow task and starts no activity until it is unpaused. Signals, updates and timers that arrive meanwhile wait, in order; queries still answer.', action: 'Pause run' },
      call('pause', (a) => ({ reason: a.reason || 'paused from the web view' }), 'Paused.')) : null;
    const unpause = admin ? button('unpause-run', '', 'Unpause run', 'Let the run go on, what waited applied in arrival order',
      { title: 'Unpause ' + id + '?', text: 'The run’s next workflow task applies what waited while it was paused, in arrival order.', action: 'Unpause run', reason: false },
      call('unpause', null, 'Unpaused.')) : null;
    const terminate = admin ? button('terminate-run', 'danger', 'Terminate run', 'End the run at once, without running its code',
      { title: 'Terminate ' + id + '?', text: 'The run ends at once, without running its code: no clean-up, no compensation.', action: 'Terminate run', danger: true },
      call('terminate', (a) => ({ reason: a.reason || 'terminated from the web view' }), 'Terminated.')) : null;
    let closed = false;
    const resume = admin ? button('resume-run', '', 'Resume run', 'Go on from the last good workflow task (a closed run), or retry a failing workflow task now',
      () => ({
        title: 'Resume ' + id + '?',
        text: closed
          ? 'A new run goes on from this run’s last good workflow task (the last one before its first failure), replayed by the code deployed now. This run keeps its status and history.'
          : 'The failing workflow task is retried now, on the code deployed now, instead of after its backoff.',
        action: 'Resume run',
      }),
      async (a) => {
        try {
          const { data } = await api('POST', base + '/resume', { reason: a.reason || 'resumed from the web view' });
          return ['Resumed: the run going on is ', el('span', { id: 'resumed-run' }, runLink(type, id, data.run_id, data.run_id)), '.'];
        } finally {
          setTimeout(refresh, 300);
        }
      }) : null;
    const buttons = [cancel, pause, unpause, terminate, resume].filter(Boolean);
    const panel = el('div', { class: 'panel', id: 'control' }, el('h2', { text: 'Operate' }), el('div', { class: 'row' }, buttons));
    panel.update = (desc, status) => {
      const running = status === 'running';
      closed = !running;
      const show = (b, yes) => { if (b) b.hidden = !yes; };
      show(cancel, running);
      show(terminate, running);
      show(pause, running && !desc.paused);
      show(unpause, running && !!desc.paused);
      show(resume, RESUMABLE.has(status) || (running && !!desc.task_failure));
      panel.hidden = buttons.every((b) => b.hidden);
    };
    return panel;
  }

  /** What the token's role cannot do here, and the role that can. */
  function roleNote(myRole) {
    if (can(myRole, 'admin')) return null;
    const text = can(myRole, 'write')
      ? 'This token has the write role: terminating, pausing, resuming and resetting a run need an admin token.'
      : 'This token has the read role: signals, updates and cancelling need a write token; terminating, pausing, resuming and resetting need an admin token.';
    return el('p', { class: 'muted panel', id: 'role-note', text });
  }

  // ---- The page ----

  wfui.renderRun = async (main, pathType, id, params) => {
    const wantRun = params.get('run') || null;
    const [{ data: d }, known, myRole] = await Promise.all([api('GET', seg(pathType) + '/runs/' + seg(id)), types(), role()]);
    const type = d.workflow_type;
    const meta = known.get(type) || { queries: [], signals: [], updates: [] };
    const base = seg(type) + '/runs/' + seg(id);
    const older = wantRun && wantRun !== d.run_id;
    document.title = 'wf · ' + id;

    const head = el('div', { class: 'panel', id: 'run-head' });
    const io = el('div', { class: 'panel', id: 'io' });
    const acts = el('div', { class: 'panel', id: 'work' });
    const relations = el('div', { id: 'relations' });
    const pending = el('div');
    const tlNode = el('div', { id: 'timeline' });
    const tl = el('div', { class: 'panel' }, el('h2', { text: 'History' }), tlNode);
    const streams = window.wfui.streamsPanel(type, id);
    window.wfui.stateHere = null;
    // What the run's actions did (kept across redraws: a reset's result outlives the run it reset).
    const actionBox = el('div', { class: 'outcome', id: 'action-outcome' });
    const side = [queriesPanel(meta, base)];
    const messages = [];
    if (!older && can(myRole, 'write')) {
      messages.push(messageForm('signal', meta.signals, async (name, args, signalId) => {
        const { data } = await api('POST', base + '/signal', { name, args, signal_id: signalId });
        setTimeout(refresh, 300);
        return data && data.status ? 'signal ' + name + ': ' + data.status : 'signal ' + name + ' sent';
      }));
      messages.push(messageForm('update', meta.updates, async (name, args, updateId) => {
        try {
          const { data } = await api('POST', base + '/update', { name, args, update_id: updateId, wait: 'completed', timeout_ms: 15000 });
          return data.value;
        } finally {
          setTimeout(refresh, 300);
        }
      }));
    }
    const control = older ? null : controlPanel(type, base, id, myRole, actionBox, () => refresh());
    if (!older) messages.push(roleNote(myRole));
    // "reset to here" on a task of the timeline (admin; on the latest run, running or closed).
    window.wfui.resetHere = !older && can(myRole, 'admin') ? (eventId, task) => perform(actionBox, null, {
      title: 'Reset ' + id + ' to workflow task ' + task + '?',
      text: 'This run closes with status reset. A new run of ' + id + ' starts from its history up to event ' + eventId +
        ', replayed by the code deployed now, and goes on from there. The signals and updates received after that point are applied again, unless dropped.',
      action: 'Reset run', danger: true,
      checks: [{ name: 'drop_messages', label: 'Drop the signals and updates received after this point' }],
    }, async (a) => {
      const from = cachedRun;
      try {
        const { data } = await api('POST', base + '/reset', { to_event: eventId, drop_messages: a.drop_messages, reason: a.reason || 'reset from the web view' });
        return ['Reset: the new run is ', el('span', { id: 'reset-new-run' }, runLink(type, id, data.run_id, data.run_id)),
          from ? ['; the reset run ', runLink(type, id, String(from).slice(0, 8) + '…', from), ' keeps its history.'] : null];
      } finally {
        setTimeout(refresh, 300);
      }
    }) : null;
    fill(main,
      el('p', {}, el('a', { href: '#/', text: '← all runs' })),
      head,
      actionBox,
      el('div', { class: 'grid' },
        el('div', {}, io, streams, acts, tl),
        el('div', {}, pending, relations, side, messages, control)));

    let timer = null;
    let stopped = false;
    let lastKey = '';
    let cached = [];
    let cachedRun = null;
    let busy = false;
    let again = false;
    /** One refresh at a time: a call during one asks for another right after it. */
    async function refresh() {
      if (stopped) return;
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      clearTimeout(timer);
      let desc = d;
      try {
        desc = (await api('GET', seg(pathType) + '/runs/' + seg(id))).data;
        // Only the new events: histories only grow, until the id names a newer run.
        if (desc.run_id !== cachedRun) cached = [];
        cachedRun = desc.run_id;
        const { events, truncated } = await history(type, id, older ? wantRun : desc.run_id, cached);
        cached = events;
        if (stopped) return;
        // On every refresh, not only on a new event: an activity may open a stream meanwhile.
        streams.update(events, older ? wantRun : desc.run_id, !older && desc.status === 'running');
        // A reset keeps the status and may keep the length: the run id tells the runs apart.
        const key = desc.run_id + ':' + desc.status + ':' + events.length + ':' + JSON.stringify(desc.pending_activities) + JSON.stringify(desc.pending_updates) + JSON.stringify(desc.blocked_on) + JSON.stringify(desc.paused);
        if (key !== lastKey) {
          lastKey = key;
          draw(desc, events, truncated);
        }
      } catch (e) {
        if (e instanceof NeedToken) {
          stopped = true;
          window.wfui.route();
          return;
        }
        fill(head, errorBanner(e));
      } finally {
        busy = false;
      }
      if (again && !stopped) {
        again = false;
        return refresh();
      }
      const live = !older && desc.status === 'running';
      document.getElementById('live').hidden = !live;
      if (live && !stopped) timer = setTimeout(refresh, REFRESH_MS);
    }
    window.wfui.onLeave(() => {
      stopped = true;
      clearTimeout(timer);
      streams.stop();
    });

    function draw(desc, events, truncated) {
      const ix = index(events);
      ix.workflowId = id;
      const status = older ? (ix.end ? TERMINAL[ix.end.type] : 'running') : desc.status;
      const started = ix.start ? ix.start.time_ms : desc.started_at_ms;
      const closed = older ? (ix.end ? ix.end.time_ms : null) : desc.closed_at_ms;
      fill(head,
        el('div', { class: 'run-head' }, el('h1', { text: id }), el('span', { id: 'run-status' }, statusPill(status)),
          !older && desc.paused ? el('span', { class: 'status s-paused', id: 'run-paused', text: 'paused' }) : null, chip(type)),
        !older && desc.paused ? el('div', { class: 'banner warn', id: 'paused-banner' },
          el('strong', { text: 'Paused by ' + desc.paused.by }), desc.paused.reason ? ': ' + desc.paused.reason : '',
          el('span', { class: 'muted' }, ' · since ', when(desc.paused.since_ms),
            ' · it gets no workflow task and starts no activity; what arrives waits for the unpause.')) : null,
        older ? el('div', { class: 'banner warn', text: 'An earlier run of this workflow id. ' }, runLink(type, id, 'Latest run →')) : null,
        desc.task_failure && !older ? el('div', { class: 'banner error' },
          el('strong', { text: desc.task_failure.nondeterminism ? 'Nondeterminism: ' : 'Workflow task failing: ' }),
          desc.task_failure.message, el('div', { class: 'muted', text: desc.task_failure.attempts + ' attempts; next ' }, when(desc.task_failure.retry_at_ms))) : null,
        el('dl', { class: 'facts' },
          el('dt', { text: 'Run id' }), el('dd', { class: 'mono', text: older ? wantRun : desc.run_id }),
          el('dt', { text: 'Task queue' }), el('dd', { text: desc.task_queue }),
          el('dt', { text: 'Started' }), el('dd', {}, when(started), el('span', { class: 'muted', text: ' · ' + iso(started) })),
          el('dt', { text: 'Closed' }), el('dd', {}, closed ? [when(closed), el('span', { class: 'muted', text: ' · took ' + duration(closed - started) })] : el('span', { class: 'muted', text: 'running for ' + duration(Date.now() - started) })),
          el('dt', { text: 'History' }), el('dd', { text: events.length + ' events' + (older ? '' : ' · ' + desc.history_bytes + ' bytes') + (truncated ? ' (first ' + HISTORY_CAP + ' shown)' : '') }),
          !older && desc.repaired_from ? [el('dt', { text: 'Repaired' }), el('dd', { id: 'repaired-from' }, repairLine(desc.repaired_from, type))] : null,
          !older && Object.keys(desc.search_attributes || {}).length ? [el('dt', { text: 'Search attributes' }), el('dd', { id: 'search-attributes' }, searchChips(desc.search_attributes))] : null,
          !older && Object.keys(desc.memo || {}).length ? [el('dt', { text: 'Memo' }), el('dd', { id: 'memo' }, Object.entries(desc.memo).map(([k, v]) => el('div', {}, el('span', { class: 'chip', text: k }), ' ', el('code', { text: short(v) }))))] : null));

      const input = ix.start ? ix.start.attributes.input : undefined;
      const end = ix.end;
      let result = el('p', { class: 'muted', text: 'No result yet: the run is ' + status.replace(/_/g, ' ') + '.' });
      if (end) {
        const a = end.attributes || {};
        if (end.type === 'WorkflowCompleted') result = valueBlock(a.result);
        else if (end.type === 'WorkflowFailed') result = el('div', { class: 'banner error', id: 'failure', text: a.message });
        else if (end.type === 'ContinuedAsNew') result = el('p', {}, 'Continued as a new run ', runLink(type, id, String(a.new_run_id)), ' with input', valueBlock(a.input));
        else if (end.type === 'WorkflowReset') result = el('div', { class: 'banner warn', id: 'reset-to' }, 'Reset by ' + a.identity + (a.reason ? ' (' + a.reason + ')' : '') + ': run ',
          runLink(type, id, String(a.new_run_id), a.new_run_id), ' goes on from event ' + a.at_event + '.');
        else result = el('div', { class: 'banner warn', text: status + ': ' + a.reason });
      }
      fill(io, el('h3', { text: 'Input' }), valueBlock(input), el('h3', { text: end && end.type === 'WorkflowFailed' ? 'Failure' : 'Result' }), el('div', { id: 'result' }, result));

      // A closed run takes no more signals, updates, cancellation or termination; it may be resumed.
      for (const panel of messages) if (panel) panel.hidden = status !== 'running';
      if (control) control.update(desc, status);

      const table = activitiesTable(ix, older ? [] : desc.pending_activities);
      acts.hidden = !table;
      fill(acts, el('h2', { text: 'Activities and timers' }), table);
      fill(pending, older ? null : [blockedPanel(desc), pendingPanel(desc)]);

      const s = ix.start ? ix.start.attributes : {};
      const rel = [];
      if (s.parent) rel.push(el('li', {}, 'Parent ', runLink('_', s.parent.workflow_id)));
      if (s.continued_from) rel.push(el('li', {}, 'Continues ', runLink(type, id, String(s.continued_from).slice(0, 13) + '…', s.continued_from)));
      for (const c of ix.children.values()) {
        const [k] = c.end ? variant(c.end) : ['running'];
        rel.push(el('li', { 'data-child': c.workflow_id }, 'Child ', chip(c.workflow_type), runLink(c.workflow_type, c.workflow_id), ' ',
          el('span', { class: 'status s-' + (k === 'running' ? 'running' : k === 'Completed' ? 'completed' : k === 'Failed' || k === 'StartFailed' ? 'failed' : 'cancelled'), text: k.toLowerCase() })));
      }
      fill(relations, rel.length ? el('div', { class: 'panel' }, el('h2', { text: 'Related runs' }), el('ul', { class: 'plain' }, rel)) : null);

      // Redrawn as a whole: keep the details the reader unfolded.
      const open = new Set([...tlNode.querySelectorAll('details[open]')].map((x) => x.closest('.event').dataset.eventId));
      fill(tlNode, events.length ? timeline(events, ix, type, status === 'running') : el('p', { class: 'muted', text: 'No events.' }));
      for (const x of tlNode.querySelectorAll('.event')) {
        if (open.has(x.dataset.eventId)) x.querySelector('details')?.setAttribute('open', '');
      }
    }

    await refresh();
  };
})();
