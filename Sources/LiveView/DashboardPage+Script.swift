extension DashboardPage {
    /// The page's script: reads `/events` (`hello`, then a `frame` a second — the backlog first for a late page —
    /// then `summary`), keeps the frames (as many as the server's backlog), and redraws the cards at most every
    /// 100 ms. Data goes into the document only through `textContent` and attribute values, never as markup.
    static let script = #"""
        'use strict';
        (() => {
          const svgNamespace = document.getElementById('svg-namespace').namespaceURI;
          const palette = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];
          const state = { hello: null, frames: [], last: -1, summary: null, latency: '', isLatencyPicked: false, latencies: [],
                          errorCodes: [], stream: 'connecting', draws: 0 };
          const byId = (id) => document.getElementById(id);
          const clear = (node) => { while (node.firstChild) node.removeChild(node.firstChild); };
          const element = (tag, text, className) => {
            const node = document.createElement(tag);
            if (text !== undefined) node.textContent = String(text);
            if (className) node.className = className;
            return node;
          };
          const svg = (tag, attributes) => {
            const node = document.createElementNS(svgNamespace, tag);
            for (const name in attributes) node.setAttribute(name, String(attributes[name]));
            return node;
          };

          const number = (value) => (typeof value === 'number' && isFinite(value) ? value : 0);
          const count = (value) => Math.round(number(value)).toLocaleString('en-US');
          const perSecond = (value) => {
            const x = number(value);
            return x < 10 ? x.toFixed(1) : Math.round(x).toLocaleString('en-US');
          };
          const clock = (seconds) => {
            const s = Math.max(0, Math.round(number(seconds)));
            const two = (v) => (v < 10 ? '0' : '') + v;
            const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
            return h > 0 ? h + ':' + two(m) + ':' + two(r) : m + ':' + two(r);
          };
          const micros = (value) => {
            const us = number(value);
            const fixed = (v, unit) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) + unit;
            if (us < 1000) return Math.round(us) + 'us';
            if (us < 1e6) return fixed(us / 1e3, 'ms');
            if (us < 6e7) return fixed(us / 1e6, 's');
            return clock(us / 1e6);
          };
          const colorOf = (index) => palette[index % palette.length];

          // One line chart: `series` are {name, color, points: [[t, value] | null (a gap)]}, `format` labels the y axis.
          function chart(id, series, format) {
            const node = byId(id);
            const width = Math.max(200, Math.floor(node.getBoundingClientRect().width) || 360), height = 160;
            const left = 60, right = 10, top = 8, bottom = 20;
            node.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
            clear(node);
            const frames = state.frames;
            const first = frames.length ? frames[0] : null, last = frames.length ? frames[frames.length - 1] : null;
            const duration = state.hello ? number(state.hello.duration) : 0;
            const x0 = first && first.n > 0 ? number(first.t) : 0;
            const lastT = last ? number(last.t) : 0;
            // The whole planned run while the backlog can hold it; past that, the span the frames cover.
            const span = state.hello ? number(state.hello.backlog) : 3600;
            const x1 = Math.max(x0 + 1, duration - x0 <= span ? Math.max(duration, lastT) : lastT);
            let highest = 0;
            for (const line of series) for (const p of line.points) if (p && p[1] > highest) highest = p[1];
            const step = niceStep(highest > 0 ? highest / 4 : 0.25);
            const y1 = Math.max(step, Math.ceil(highest / step) * step);
            const x = (t) => left + ((t - x0) / (x1 - x0)) * (width - left - right);
            const y = (v) => top + (1 - v / y1) * (height - top - bottom);
            for (let v = 0; v <= y1 + step / 2; v += step) {
              node.appendChild(svg('line', { class: 'grid', x1: left, x2: width - right, y1: y(v), y2: y(v) }));
              const label = svg('text', { x: left - 4, y: y(v) + 3, 'text-anchor': 'end' });
              label.textContent = format(v);
              node.appendChild(label);
            }
            const ticks = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];
            const tick = ticks.find((s) => (x1 - x0) / s <= 6) || 86400 * Math.ceil((x1 - x0) / 86400 / 6);
            for (let t = Math.ceil(x0 / tick) * tick; t <= x1; t += tick) {
              const label = svg('text', { x: x(t), y: height - 6, 'text-anchor': 'middle' });
              label.textContent = clock(t);
              node.appendChild(label);
            }
            const legend = byId(id.replace('chart-', 'legend-'));
            clear(legend);
            series.forEach((line) => {
              let path = '', isDown = false;
              line.points.forEach((p, index) => {
                if (!p) { isDown = false; return; }
                path += (isDown ? 'L' : 'M') + x(p[0]).toFixed(1) + ' ' + y(Math.min(p[1], y1)).toFixed(1);
                const next = line.points[index + 1];
                if (!isDown && !next) path += 'h0.5';
                isDown = true;
              });
              if (path) node.appendChild(svg('path', { class: 'series', d: path, stroke: line.color, 'data-series': line.name }));
              const entry = element('span', line.name);
              const swatch = element('i');
              swatch.style.background = line.color;
              entry.insertBefore(swatch, entry.firstChild);
              legend.appendChild(entry);
            });
          }
          function niceStep(raw) {
            const power = Math.pow(10, Math.floor(Math.log10(raw)));
            for (const factor of [1, 2, 5, 10]) if (raw <= factor * power) return factor * power;
            return 10 * power;
          }
          // Per-second points of `value(frame)` (null while stopping: those frames carry no span).
          const rates = (value) => state.frames.map((f) => (f.seconds > 0 ? [f.t, number(value(f)) / f.seconds] : null));
          const levels = (value) => state.frames.map((f) => [f.t, number(value(f))]);

          function table(id, headings, rows) {
            const node = byId(id);
            clear(node);
            if (!rows.length) return;
            const head = element('tr');
            for (const heading of headings) head.appendChild(element('th', heading));
            node.appendChild(head);
            for (const row of rows) {
              const line = element('tr');
              row.forEach((cell) => {
                const isCell = cell !== null && typeof cell === 'object';
                line.appendChild(element('td', isCell ? cell.text : cell, isCell ? cell.className : ''));
              });
              node.appendChild(line);
            }
          }
          const entries = (object) => (object && typeof object === 'object' ? Object.keys(object).map((k) => [k, object[k]]) : []);

          function drawHeader(last) {
            const status = byId('status');
            let text = state.stream, className = '';
            if (state.summary) {
              text = 'ended: ' + String(state.summary.verdict).replace(/_/g, ' ');
              className = state.summary.verdict === 'passed' ? 'passed' : 'failed';
            } else if (last && last.stopping && state.stream === 'live') {
              text = 'stopping: ' + number(last.stopLeft).toFixed(1) + ' s left, ' + count(last.live) + ' closing';
              className = 'stopping';
            } else if (state.stream === 'live') {
              className = 'live';
            }
            status.textContent = text;
            status.className = 'badge ' + className;
            const duration = state.hello ? number(state.hello.duration) : 0;
            const elapsed = state.summary ? number(state.summary.elapsed) : last ? number(last.t) : 0;
            byId('clock').textContent = clock(elapsed) + ' of ' + clock(duration);
            byId('progress-bar').style.width = (duration > 0 ? Math.min(100, (elapsed / duration) * 100) : 0) + '%';
          }

          function drawCards(last) {
            byId('stat-connections').textContent = (last.stopping ? count(last.live) + ' closing, '
              : 'live ' + count(last.live) + ' of ' + count(last.target) + ' targeted, ') + count(last.total.opened) + ' opened in all';
            chart('chart-connections', [
              { name: 'live', color: colorOf(0), points: levels((f) => f.live) },
              { name: 'target', color: '#9ca3af', points: levels((f) => f.target) },
            ], count);
            table('table-scenarios', ['scenario', 'live', 'target'],
              (last.scenarios || []).map((s) => [s.name, count(s.live), count(s.target)]));

            const latest = [...state.frames].reverse().find((f) => f.seconds > 0) || last;
            byId('stat-messages').textContent = 'sent ' + perSecond(latest.sent / (latest.seconds || 1)) + '/s, received '
              + perSecond(latest.received / (latest.seconds || 1)) + '/s; ' + count(last.total.received) + ' received in all';
            chart('chart-messages', [
              { name: 'sent', color: colorOf(0), points: rates((f) => f.sent) },
              { name: 'received', color: colorOf(2), points: rates((f) => f.received) },
            ], perSecond);

            drawLatency();

            const errorsNow = entries(latest.errors).reduce((sum, e) => sum + number(e[1]), 0) / (latest.seconds || 1);
            const errorsAll = entries(last.total.errors).reduce((sum, e) => sum + number(e[1]), 0);
            byId('stat-errors').textContent = perSecond(errorsNow) + '/s now, ' + count(errorsAll) + ' in all';
            for (const [code] of entries(last.total.errors)) if (!state.errorCodes.includes(code)) state.errorCodes.push(code);
            chart('chart-errors', state.errorCodes.map((code, index) => (
              { name: code, color: colorOf(index + 1), points: rates((f) => (f.errors || {})[code]) })), perSecond);
            table('table-errors', ['code', 'now', 'in all'],
              entries(last.total.errors).map(([code, n]) => [code, perSecond(number((latest.errors || {})[code]) / (latest.seconds || 1)) + '/s', count(n)]));

            byId('stat-reconnects').textContent = 'reconnects ' + perSecond(latest.reconnects / (latest.seconds || 1)) + '/s, '
              + count(last.total.reconnects) + ' in all';
            chart('chart-reconnects', [
              { name: 'reconnects', color: colorOf(3), points: rates((f) => f.reconnects) },
              { name: 'disconnects', color: colorOf(4), points: rates((f) => f.disconnects) },
            ], perSecond);
            table('table-disconnects', ['close code', 'disconnects'], entries(last.total.disconnects).map(([code, n]) => [code, count(n)]));

            drawInvariants(last.invariants || {}, 'stat-invariants', 'table-invariants');
          }

          function drawLatency() {
            const select = byId('latency-select');
            const names = [...(state.hello ? state.hello.latencies || [] : [])];
            for (const f of state.frames) for (const name of Object.keys(f.latency || {})) if (!names.includes(name)) names.push(name);
            const seen = names.filter((name) => state.frames.some((f) => f.latency && f.latency[name]));
            if (seen.join('\n') !== state.latencies.join('\n')) {
              state.latencies = seen;
              clear(select);
              for (const name of seen) {
                const option = element('option', name);
                option.value = name;
                select.appendChild(option);
              }
            }
            // Until someone picks one: the first main latency (hello's order) the last second measured.
            if (!state.isLatencyPicked || !seen.includes(state.latency)) {
              const recent = [...state.frames].reverse().find((f) => f.seconds > 0);
              state.latency = seen.find((name) => recent && recent.latency && recent.latency[name]) || seen[0] || '';
            }
            select.value = state.latency;
            const name = state.latency;
            const pick = (key) => state.frames.map((f) => (f.latency && f.latency[name] ? [f.t, number(f.latency[name][key])] : null));
            const latest = [...state.frames].reverse().find((f) => f.latency && f.latency[name]);
            const figures = latest ? latest.latency[name] : null;
            byId('stat-latency').textContent = figures
              ? 'p50 ' + micros(figures.p50) + ', p90 ' + micros(figures.p90) + ', p99 ' + micros(figures.p99) + ', max '
                + micros(figures.max) + ' (' + count(figures.n) + ' in the last second)'
              : 'no samples yet';
            chart('chart-latency', [
              { name: 'p50', color: colorOf(0), points: pick('p50') },
              { name: 'p90', color: colorOf(4), points: pick('p90') },
              { name: 'p99', color: colorOf(1), points: pick('p99') },
            ], micros);
          }

          function drawInvariants(invariants, statId, tableId) {
            const violations = number(invariants.violations);
            if (statId) {
              const stat = byId(statId);
              stat.textContent = count(invariants.checks) + ' checks, ' + count(violations) + ' violations';
              stat.className = 'stat ' + (violations > 0 ? 'bad' : 'ok');
            }
            table(tableId, ['invariant', 'checks', 'violations'], (invariants.byName || []).map((i) => [
              i.name, count(i.checked), { text: count(i.violations), className: number(i.violations) > 0 ? 'bad' : '' }]));
          }

          function drawSummary() {
            const summary = state.summary;
            byId('summary').hidden = false;
            const verdict = byId('verdict');
            verdict.textContent = String(summary.verdict).replace(/_/g, ' ');
            verdict.className = 'badge ' + (summary.verdict === 'passed' ? 'passed' : 'failed');
            let detail = 'exit code ' + summary.exitCode + ', ran ' + clock(summary.elapsed) + ' of ' + clock(summary.duration);
            if (summary.abortedBy) detail += ', aborted: ' + summary.abortedBy + ' failed';
            if (summary.interruptedBy) detail += ', interrupted by ' + summary.interruptedBy;
            table('summary-thresholds', ['threshold', 'actual', 'limit', ''], (summary.thresholds || []).map((t) => [
              t.expression, t.actualText, t.limitText,
              { text: t.passed ? '✓ pass' : '✗ fail', className: t.passed ? 'ok' : 'bad' }]));
            if (!(summary.thresholds || []).length) table('summary-thresholds', ['threshold'], [['none']]);
            drawInvariants(summary.invariants || {}, null, 'summary-invariants');
            byId('verdict-detail').textContent = detail + '; invariants ' + (summary.invariantsHeld ? 'held' : 'violated');
            const totals = summary.totals || {};
            const rows = [['connections opened', count(totals.opened)], ['messages sent', count(totals.sent)],
              ['messages received', count(totals.received)], ['reconnects', count(totals.reconnects)]];
            for (const [code, n] of entries(totals.errors)) rows.push(['errors: ' + code, { text: count(n), className: 'bad' }]);
            for (const [name, figures] of entries(totals.latency)) {
              rows.push([name + ' p50 / p99', micros(figures.p50) + ' / ' + micros(figures.p99)]);
            }
            table('summary-totals', ['', 'run'], rows);
          }

          let isScheduled = false;
          function draw() {
            isScheduled = false;
            state.draws += 1;
            const last = state.frames.length ? state.frames[state.frames.length - 1] : null;
            drawHeader(last);
            if (last) drawCards(last);
            if (state.summary) drawSummary();
          }
          function schedule() {
            if (isScheduled) return;
            isScheduled = true;
            setTimeout(draw, 100);
          }

          const read = (event) => {
            try { return JSON.parse(event.data); } catch (error) { return null; }
          };
          const source = new EventSource('/events');
          source.addEventListener('hello', (event) => {
            const hello = read(event);
            if (!hello) return;
            if (state.hello && state.hello.runId !== hello.runId) { state.frames = []; state.last = -1; state.errorCodes = []; }
            state.hello = hello;
            state.stream = 'live';
            byId('profile').textContent = String(hello.profile);
            document.title = 'wsload: ' + hello.profile;
            byId('run').textContent = 'run ' + hello.runId + (hello.shard ? ', shard ' + hello.shard : '');
            schedule();
          });
          source.addEventListener('frame', (event) => {
            const frame = read(event);
            if (!frame || typeof frame.n !== 'number' || frame.n <= state.last) return;
            state.last = frame.n;
            state.frames.push(frame);
            const limit = state.hello ? number(state.hello.backlog) || 3600 : 3600;
            if (state.frames.length > limit) state.frames.splice(0, state.frames.length - limit);
            schedule();
          });
          source.addEventListener('summary', (event) => {
            const summary = read(event);
            if (!summary) return;
            state.summary = summary;
            state.stream = 'ended';
            source.close();
            schedule();
          });
          source.addEventListener('error', () => {
            if (state.summary) return;
            state.stream = 'reconnecting';
            schedule();
          });
          source.addEventListener('open', () => { if (state.hello) state.stream = 'live'; });
          byId('latency-select').addEventListener('change', (event) => {
            state.latency = event.target.value;
            state.isLatencyPicked = true;
            schedule();
          });
          window.addEventListener('resize', schedule);
          window.wsloadDashboard = () => ({ frames: state.frames.length, first: state.frames.length ? state.frames[0].n : -1,
                                            last: state.last, hasHello: state.hello !== null,
                                            hasSummary: state.summary !== null, stream: state.stream, draws: state.draws });
          schedule();
        })();

        """#
}
