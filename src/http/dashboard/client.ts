/**
 * The dashboard's only script, served at /ui/app.js (a TS module so that tsc ships it in dist/).
 * Plain browser JavaScript, no build step. Pages are rendered on the server; this script:
 * - refreshes the `[data-live]` sections of the page by fetching the page again and swapping them
 *   (the agents list every 2 s; an agent's page on each SSE `snapshot`), never dropping a parent or
 *   children the agent's page already shows;
 * - moves the statechart highlight as soon as a snapshot arrives (`g.state[data-state]`);
 * - shows the answer of the LLM call in flight as its `token` events arrive (`#live-answer`), and
 *   follows the stream from the last event id received when the server drops it or it gives up;
 * - sends events (the event forms and the approval buttons: every `form[data-event]`), spawns, forks
 *   and stops through the JSON API (the login cookie authenticates).
 * It avoids template literals so that it can live inside one.
 */
import { LOGIN_PATH } from './layout.js';

export const CLIENT_SCRIPT = String.raw`
(function () {
  'use strict';
  var $ = function (sel, root) { return (root || document).querySelector(sel); };
  var $$ = function (sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); };
  var LOGIN = ${JSON.stringify(LOGIN_PATH)};

  function flash(message, isError) {
    var box = $('#flash');
    if (!box) return;
    var div = document.createElement('div');
    div.textContent = message;
    if (isError) div.className = 'error';
    box.appendChild(div);
    setTimeout(function () { div.remove(); }, isError ? 8000 : 3000);
  }

  function toLogin() {
    location.href = LOGIN + '?next=' + encodeURIComponent(location.pathname + location.search);
  }

  // The JSON API, same origin: the HttpOnly login cookie goes along.
  function api(method, url, body) {
    var init = { method: method, credentials: 'same-origin', headers: { accept: 'application/json' } };
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch(url, init).then(function (res) {
      if (res.status === 401) { toLogin(); throw new Error('Please log in.'); }
      return res.text().then(function (text) {
        var data;
        try { data = text ? JSON.parse(text) : undefined; } catch (e) { data = undefined; }
        if (!res.ok) throw new Error((data && data.error && data.error.message) || ('HTTP ' + res.status));
        return data;
      });
    });
  }

  // An agent's parent never changes and its children are never taken away: a redrawn family section
  // that has fewer of them (drawn from a view that does not carry them) leaves the one shown as it is.
  function losesFamily(current, fresh) {
    var shown = $('.family', current);
    if (!shown) return false;
    var next = $('.family', fresh);
    var count = function (el) { return el ? Number(el.getAttribute('data-children')) || 0 : 0; };
    var parentOf = function (el) { return el ? el.getAttribute('data-parent') || '' : ''; };
    return (parentOf(shown) !== '' && parentOf(next) === '') || count(next) < count(shown);
  }

  // Fetches this page again and swaps every [data-live] section whose HTML changed.
  var refreshing = null;
  var again = false;
  function refresh() {
    if (refreshing) { again = true; return refreshing; }
    refreshing = (function loop() {
      again = false;
      return fetch(location.href, { credentials: 'same-origin', headers: { accept: 'text/html' } })
        .then(function (res) {
          if (res.redirected && new URL(res.url).pathname === LOGIN) { location.href = res.url; return; }
          if (!res.ok) return;
          return res.text().then(function (html) {
            var doc = new DOMParser().parseFromString(html, 'text/html');
            $$('[data-live]', doc).forEach(function (fresh) {
              var current = document.querySelector('[data-live="' + fresh.getAttribute('data-live') + '"]');
              if (current && current.innerHTML !== fresh.innerHTML && !losesFamily(current, fresh)) current.innerHTML = fresh.innerHTML;
            });
            var accepted = $('[data-accepted]', doc);
            if (accepted) applyAccepted(accepted.getAttribute('data-accepted'));
            var stop = $('#stop');
            if (stop && !$('#stop', doc)) stop.remove();
            document.dispatchEvent(new Event('dashboard:refreshed'));
          });
        })
        .catch(function () { /* the next refresh tries again */ })
        .then(function () { return again ? loop() : undefined; });
    })().then(function () { refreshing = null; });
    return refreshing;
  }

  // --- the statechart ----------------------------------------------------------------------------

  function activePaths(value, prefix) {
    prefix = prefix || '';
    if (typeof value === 'string') return [prefix + value];
    if (!value || typeof value !== 'object') return [];
    var out = [];
    Object.keys(value).forEach(function (key) {
      out.push(prefix + key);
      out = out.concat(activePaths(value[key], prefix + key + '.'));
    });
    return out;
  }

  function formatState(value) {
    if (typeof value === 'string') return value;
    if (!value || typeof value !== 'object') return String(value);
    return Object.keys(value).map(function (key) { return key + '.' + formatState(value[key]); }).join(', ');
  }

  function highlight(stateValue, cls) {
    var active = {};
    activePaths(stateValue).forEach(function (p) { active[p] = true; });
    $$('svg.chart g.state').forEach(function (g) { g.classList.toggle(cls, !!active[g.getAttribute('data-state')]); });
    if (cls === 'active') {
      $$('svg.chart g.edge').forEach(function (g) { g.classList.toggle('next', !!active[g.getAttribute('data-from')]); });
    }
  }

  function applyAccepted(list) {
    var box = $('#events');
    if (!box) return;
    var accepted = (list || '').split(' ').filter(Boolean);
    box.setAttribute('data-accepted', accepted.join(' '));
    $$('form[data-event]', box).forEach(function (form) { form.hidden = accepted.indexOf(form.getAttribute('data-event')) < 0; });
    var none = $('#no-events');
    if (none) none.hidden = accepted.length > 0;
  }

  // --- an agent's page ----------------------------------------------------------------------------

  function agentPage() {
    var id = document.body.getAttribute('data-agent-id');
    var base = '/agents/' + encodeURIComponent(id);
    var selected = null;

    function applyView(view) {
      document.body.setAttribute('data-status', view.status);
      document.body.setAttribute('data-state', JSON.stringify(view.state));
      highlight(view.state, 'active');
      var state = $('#state');
      if (state) state.textContent = formatState(view.state);
      var progress = $('#progress');
      if (progress) progress.textContent = String(view.progress);
    }

    // --- the live stream: snapshots, the answer being written, resuming by event id ----------------

    // The text of the LLM call in flight as the model writes it (the token events of task seq, call
    // turn). Hidden again once a snapshot shows the call past (its answer committed: the redrawn
    // conversation shows it), and then only refilled, never shown, by deltas of that call still
    // coming (a stream that resumes replays the missed ones after the snapshots).
    var live = {
      box: $('#live-answer'), text: $('#live-text'), label: $('#live-turn'), note: $('#live-note'),
      key: null, seq: 0, turn: 0, next: 0, node: null, state: '', done: false,
    };
    var lastView = null;

    function num(value) { return typeof value === 'number' ? value : undefined; }

    // The view shows the call (seq, turn) answered or given up: the reference agent counts tasks
    // taken and turns answered; for a context without them, a change of state is the best sign.
    function pastCall(view, seq, turn) {
      if (!view) return false;
      if (view.status !== 'active') return true;
      var context = view.context || {};
      var current = context.current;
      var taken = num(context.taken);
      if (current && num(current.seq) !== undefined && num(context.turn) !== undefined) {
        return current.seq > seq || (current.seq === seq && context.turn > turn);
      }
      if (current === null && taken !== undefined) return taken >= seq;
      return JSON.stringify(view.state) !== live.state;
    }

    function clearLiveText() {
      live.text.textContent = '';
      live.node = document.createTextNode('');
      live.text.appendChild(live.node);
      live.next = 0;
    }

    function onToken(data) {
      if (!live.box) return;
      var key = data.seq + '.' + data.turn;
      if (key !== live.key) {
        live.key = key;
        live.seq = data.seq;
        live.turn = data.turn;
        live.state = lastView ? JSON.stringify(lastView.state) : (document.body.getAttribute('data-state') || '');
        // Deltas relayed from another process may come after the snapshot that committed them.
        live.done = pastCall(lastView, data.seq, data.turn);
        clearLiveText();
        live.label.textContent = 'task ' + data.seq + ' \u00b7 turn ' + data.turn;
        live.note.textContent = '';
      }
      if (data.index < live.next) return; // had it already
      live.next = data.index + 1;
      var pre = live.text;
      var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
      live.node.appendData(data.delta); // text, never HTML: it is model output
      if (!live.done) live.box.hidden = false;
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    }

    // That call is asked again (a retry, or after a crash): what it streamed so far is void.
    function onRestart(data) {
      if (!live.box || live.key !== data.seq + '.' + data.turn) return;
      clearLiveText();
      live.note.textContent = 'asked again';
    }

    // A snapshot that shows the call past hides it once the conversation is redrawn with its answer.
    function settleLive(view, redrawn) {
      if (!live.box || live.key === null || live.done || !pastCall(view, live.seq, live.turn)) return;
      live.done = true;
      var key = live.key;
      redrawn.then(function () { if (live.key === key && live.done) live.box.hidden = true; });
    }

    var source = null;
    var lastId = '';
    var ended = false;
    var failures = 0;
    var retryTimer = null;

    function onView(view) {
      lastView = view;
      applyView(view);
      settleLive(view, refresh());
      if (view.status !== 'active') { // the server ends the stream: nothing changes any more
        ended = true;
        if (source) source.close();
      }
    }

    // From the last id received (none at first): the server sends what was missed, then live events.
    function connect() {
      retryTimer = null;
      if (ended) return;
      var es = new EventSource(base + '/stream' + (lastId ? '?from=' + encodeURIComponent(lastId) : ''));
      source = es;
      function received(handle) {
        return function (e) {
          if (es !== source) return;
          if (e.lastEventId) lastId = e.lastEventId;
          failures = 0;
          handle(JSON.parse(e.data));
        };
      }
      es.addEventListener('snapshot', received(onView));
      es.addEventListener('token', received(onToken));
      es.addEventListener('restart', received(onRestart));
      // Too slow a reader: the server let go; come back at once from the last id.
      es.addEventListener('dropped', function () {
        if (es !== source) return;
        es.close();
        connect();
      });
      es.addEventListener('error', function (e) {
        if (es !== source) return;
        if (e.data) flash('The live stream failed on the server; reload the page.', true);
        // EventSource reconnects by itself after a network error (sending Last-Event-ID); it gives up
        // (CLOSED) when a reconnection is answered otherwise than with a stream (a proxy's 502, a 204).
        if (es.readyState === 2) reconnectLater(es);
      });
    }

    function reconnectLater(es) {
      es.close();
      if (ended || retryTimer) return;
      var delay = Math.min(30000, 500 * Math.pow(2, failures));
      failures++;
      retryTimer = setTimeout(function () {
        // Why it closed is not told: ask the API whether there is anything left to follow (a 401 logs in again).
        api('GET', base).then(function (view) {
          if (view.status === 'active') return connect();
          retryTimer = null;
          onView(view);
        }, function () {
          retryTimer = null;
          reconnectLater(es);
        });
      }, delay);
    }

    if (document.body.getAttribute('data-status') === 'active') connect();

    function markSelected() {
      $$('#checkpoints button[data-seq]').forEach(function (b) {
        b.classList.toggle('selected', b.getAttribute('data-seq') === String(selected));
      });
    }
    document.addEventListener('dashboard:refreshed', markSelected);

    document.addEventListener('click', function (e) {
      var item = e.target.closest && e.target.closest('#checkpoints button[data-seq]');
      if (!item) return;
      selected = Number(item.getAttribute('data-seq'));
      markSelected();
      var seq = selected;
      api('GET', base + '/checkpoints/' + seq).then(function (cp) {
        if (seq !== selected) return;
        $('#checkpoint-title').textContent = 'Checkpoint #' + cp.seq + ' — state ';
        var state = document.createElement('span');
        state.className = 'state-name';
        state.id = 'checkpoint-state';
        state.textContent = formatState(cp.state);
        $('#checkpoint-title').appendChild(state);
        $('#checkpoint-meta').textContent = 'after ' + cp.eventType + ' · status ' + cp.status + ' · progress ' + cp.progress +
          ' · ' + cp.createdAt + ' · context then:';
        $('#checkpoint-context').textContent = JSON.stringify(cp.snapshot && cp.snapshot.context, null, 2);
        $('#checkpoint-detail').hidden = false;
        highlight(cp.state, 'then');
      }).catch(function (err) { flash(err.message, true); });
    });

    var fork = $('#fork');
    if (fork) fork.addEventListener('click', function () {
      if (selected === null) return;
      fork.disabled = true;
      api('POST', base + '/fork', { checkpoint: selected }).then(function (view) {
        location.href = '/ui/agents/' + encodeURIComponent(view.id);
      }).catch(function (err) { fork.disabled = false; flash(err.message, true); });
    });

    var stop = $('#stop');
    if (stop) stop.addEventListener('click', function () {
      if (!confirm('Stop agent ' + id + ' for good?')) return;
      stop.disabled = true;
      api('DELETE', base).then(function () { flash('Stopped.'); refresh(); }).catch(function (err) {
        stop.disabled = false;
        flash(err.message, true);
      });
    });

    document.addEventListener('submit', function (e) {
      var form = e.target.closest && e.target.closest('form[data-event]');
      if (!form) return;
      e.preventDefault();
      var event = { type: form.getAttribute('data-event') };
      try {
        $$('input[name]', form).forEach(function (input) {
          if (input.value === '' && !input.required) return;
          event[input.name] = input.getAttribute('data-kind') === 'json' ? JSON.parse(input.value) : input.value;
        });
      } catch (err) {
        flash('Not valid JSON: ' + err.message, true);
        return;
      }
      var button = $('button', form);
      button.disabled = true;
      api('POST', base + '/events', event).then(function (res) {
        form.reset();
        flash(event.type + ' accepted (event #' + res.seq + ')');
      }).catch(function (err) { flash(err.message, true); }).then(function () { button.disabled = false; });
    });
  }

  // --- the agents list ----------------------------------------------------------------------------

  function agentsPage() {
    var filters = $('#filters');
    var timer = null;
    function applyFilters() {
      var params = new URLSearchParams();
      new FormData(filters).forEach(function (value, key) { if (value) params.set(key, String(value)); });
      var text = params.toString();
      history.replaceState(null, '', text ? '/?' + text : '/');
      refresh();
    }
    if (filters) {
      filters.addEventListener('submit', function (e) { e.preventDefault(); applyFilters(); });
      filters.addEventListener('change', applyFilters);
      filters.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(applyFilters, 250); });
    }
    setInterval(function () { if (document.visibilityState === 'visible') refresh(); }, 2000);

    var spawn = $('#spawn');
    if (spawn) spawn.addEventListener('submit', function (e) {
      e.preventDefault();
      var data = new FormData(spawn);
      var body = { machine: String(data.get('machine')) };
      var id = String(data.get('id') || '').trim();
      if (id) body.id = id;
      var input = String(data.get('input') || '').trim();
      if (input) {
        try { body.input = JSON.parse(input); } catch (err) { flash('Input is not valid JSON: ' + err.message, true); return; }
      }
      api('POST', '/agents', body).then(function (view) {
        location.href = '/ui/agents/' + encodeURIComponent(view.id);
      }).catch(function (err) { flash(err.message, true); });
    });
  }

  var page = document.body.getAttribute('data-page');
  if (page === 'agent') agentPage();
  else if (page === 'agents') agentsPage();
})();
`;
