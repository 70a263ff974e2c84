// wf web view, part 4: a run's durable streams, live, on the run page. The panel lists the
// streams the run's history names (the workflow's writes and closes, seen at once) and those
// `GET /{type}/runs/{id}/streams` names (an activity's writes too, which are not in history),
// and follows each one on `GET /{type}/runs/{id}/streams/{name}?from=0`, the server-sent
// events route: with an
// EventSource, which reconnects by itself and resumes after the last entry by Last-Event-ID,
// or, when the page holds a token (an EventSource cannot send one), with a fetch of the same
// route that reconnects and resumes the same way. Entries reach the page as text only.
'use strict';

(() => {
  const { el, fill, api, seg, bearer } = window.wfui;
  // The page is served at <root>/ui/; the API routes live at <root>/.
  const ROOT = new URL('../', document.baseURI);
  const RETRY_MS = 1000;
  // The entries kept on the page per stream (a stream holds up to 10,000).
  const SHOWN = 500;

  const parse = (text) => {
    try {
      return JSON.parse(text);
    } catch (_) {
      return text;
    }
  };

  /** Follows the route at `url`; `on` hears `entry(offset, data)`, `end({closed, offset})`,
   * `failed(message)` and `state(text)`. Returns the function that stops it. */
  function follow(url, on) {
    const t = bearer();
    return t ? followByFetch(url, t, on) : followByEventSource(url, on);
  }

  function followByEventSource(url, on) {
    const es = new EventSource(url);
    es.onopen = () => on.state('live');
    es.onmessage = (m) => on.entry(Number(m.lastEventId), m.data);
    // The server closes the response after `end`: without close() the browser would reconnect.
    es.addEventListener('end', (m) => {
      es.close();
      on.end(parse(m.data));
    });
    es.addEventListener('error', (m) => {
      if (m instanceof MessageEvent) {
        // The route's own `event: error` (the store failed): said, not retried.
        es.close();
        on.failed(String(parse(m.data).error || m.data));
      } else if (es.readyState === EventSource.CLOSED) {
        // Refused (a 404, a 401): an EventSource does not retry those.
        on.failed('the server refused the stream');
      } else on.state('reconnecting');
    });
    return () => es.close();
  }

  function followByFetch(url, t, on) {
    const abort = new AbortController();
    let stopped = false;
    let last = null;
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    (async () => {
      while (!stopped) {
        try {
          const headers = { Accept: 'text/event-stream', Authorization: 'Bearer ' + t };
          if (last !== null) headers['Last-Event-ID'] = String(last);
          const res = await fetch(url, { headers, cache: 'no-store', signal: abort.signal });
          if (!res.ok) {
            on.failed('the server answered ' + res.status);
            return;
          }
          on.state('live');
          const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
          let buf = '';
          let ev = { event: '', data: [], id: null };
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += value;
            let nl;
            while ((nl = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, nl).replace(/\r$/, '');
              buf = buf.slice(nl + 1);
              if (line === '') {
                const { event: kind, data: lines, id: eid } = ev;
                ev = { event: '', data: [], id: null };
                if (eid !== null) last = eid;
                const data = lines.join('\n');
                if (kind === 'end') return on.end(parse(data));
                if (kind === 'error') return on.failed(String(parse(data).error || data));
                if (lines.length && last !== null) on.entry(Number(last), data);
                continue;
              }
              if (line.startsWith(':')) continue;
              const colon = line.indexOf(':');
              const field = colon < 0 ? line : line.slice(0, colon);
              const v = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
              if (field === 'event') ev.event = v;
              else if (field === 'data') ev.data.push(v);
              else if (field === 'id') ev.id = v;
            }
          }
        } catch (e) {
          if (stopped) return;
        }
        on.state('reconnecting');
        await sleep(RETRY_MS);
      }
    })();
    return () => {
      stopped = true;
      abort.abort();
    };
  }

  /** The streams panel of run page `type`/`id`: `update(events, runId, running)` after each
   * history read, `stop()` when the page is left. Hidden while the run has no stream. */
  wfui.streamsPanel = (type, id) => {
    const watched = new Map();
    let runId = null;
    let listing = false;
    let listed = false;
    let gone = false;
    const list = el('div', { id: 'stream-list' });
    const panel = el('div', { class: 'panel', id: 'streams', hidden: true }, el('h2', { text: 'Streams' }), list);

    function watch(name) {
      if (!name || gone || watched.has(name)) return;
      const entries = el('div', { class: 'stream-entries' });
      const state = el('span', { class: 'chip stream-state', 'data-stream-state': 'connecting', text: 'connecting' });
      const count = el('span', { class: 'muted stream-count', text: '0 entries' });
      const box = el('section', { class: 'stream', 'data-stream': name },
        el('div', { class: 'stream-head' }, el('strong', { text: name }), ' ', state, ' ', count), entries);
      list.append(box);
      panel.hidden = false;
      let next = 0;
      const setState = (s, text) => {
        state.dataset.streamState = s;
        state.textContent = text || s;
      };
      const q = new URLSearchParams({ from: '0' });
      if (runId) q.set('run_id', runId);
      const url = new URL(seg(type) + '/runs/' + seg(id) + '/streams/' + seg(name) + '?' + q, ROOT);
      const stop = follow(url, {
        entry: (offset, data) => {
          if (offset < next) return;
          next = offset + 1;
          const atBottom = entries.scrollTop + entries.clientHeight >= entries.scrollHeight - 4;
          entries.append(el('div', { class: 'stream-entry', 'data-offset': offset },
            el('span', { class: 'eid', text: String(offset) }), el('pre', { class: 'value', text: JSON.stringify(parse(data)) })));
          while (entries.childElementCount > SHOWN) entries.firstElementChild.remove();
          count.textContent = next + (next === 1 ? ' entry' : ' entries') + (next > SHOWN ? ' (the last ' + SHOWN + ' shown)' : '');
          if (atBottom) entries.scrollTop = entries.scrollHeight;
        },
        end: (e) => setState(e && e.closed ? 'closed' : 'ended', e && e.closed ? 'closed' : 'run ended'),
        failed: (message) => setState('failed', 'failed: ' + message),
        state: (s) => setState(s),
      });
      watched.set(name, stop);
    }

    function stop() {
      for (const s of watched.values()) s();
      watched.clear();
      fill(list);
      panel.hidden = true;
    }

    /** Follows the streams the store lists for the run (an activity's among them). */
    async function fromStore() {
      listing = true;
      try {
        const q = new URLSearchParams();
        if (runId) q.set('run_id', runId);
        const { data } = await api('GET', seg(type) + '/runs/' + seg(id) + '/streams?' + q);
        if (data.run_id === runId || !runId) for (const s of data.streams) watch(s.name);
        listed = true;
      } catch (_) {
        // The history's streams are shown anyway; the next refresh asks again.
      } finally {
        listing = false;
      }
    }

    panel.update = (events, newRunId, running) => {
      // Another run of the id (a reset, a continue-as-new) has streams of its own.
      if (newRunId !== runId) {
        stop();
        runId = newRunId;
        listed = false;
      }
      for (const e of events) {
        if (e.type === 'StreamWritten' || e.type === 'StreamClosed') watch((e.attributes || {}).stream);
      }
      // A closed run writes no new stream: one list is enough.
      if (!listing && (running || !listed)) fromStore();
    };
    panel.stop = () => {
      gone = true;
      stop();
    };
    return panel;
  };
})();
