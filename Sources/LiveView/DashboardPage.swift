/// The page `--dashboard` serves at `/`: one HTML document with its CSS and script inline, nothing fetched but
/// `/events` (the `Content-Security-Policy` below forbids anything else). The charts are SVG drawn by the script from
/// the frames; every string a frame brings is inserted with `textContent` (never as markup). The document is static:
/// the run's data reaches it only through the event stream.
package enum DashboardPage {
    /// The header that confines the page to itself: inline script and style, `data:` images (the empty icon), and
    /// connections to its own origin (`/events`).
    package static let contentSecurityPolicy =
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'"

    /// The whole document.
    package static let html: String = head + style + body + "<script>\n" + script + "</script>\n</body>\n</html>\n"

    private static let head = """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>wsload dashboard</title>
        <link rel="icon" href="data:,">

        """

    private static let style = #"""
        <style>
        :root { --fg: #1f2937; --muted: #6b7280; --line: #e5e7eb; --bg: #f3f4f6; --card: #fff; --ok: #15803d; --bad: #b91c1c;
                --warn: #b45309; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
               background: var(--bg); }
        header { position: relative; display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 20px; padding: 10px 16px;
                 background: var(--card); border-bottom: 1px solid var(--line); }
        h1 { font-size: 18px; margin: 0; overflow-wrap: anywhere; }
        .meta { color: var(--muted); font-size: 12px; }
        .badge { display: inline-block; padding: 1px 10px; border-radius: 999px; font-size: 12px; font-weight: 600;
                 background: var(--line); }
        .badge.live { background: #dcfce7; color: var(--ok); }
        .badge.stopping { background: #fef3c7; color: var(--warn); }
        .badge.passed { background: #15803d; color: #fff; }
        .badge.failed { background: #b91c1c; color: #fff; }
        .progress { position: absolute; left: 0; right: 0; bottom: 0; height: 3px; }
        #progress-bar { height: 100%; width: 0; background: #2563eb; }
        main { display: grid; grid-template-columns: repeat(auto-fill, minmax(380px, 1fr)); gap: 12px; padding: 12px; }
        .card { min-width: 0; padding: 8px 12px 10px; background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
        .card.wide { grid-column: 1 / -1; }
        h2 { display: flex; justify-content: space-between; align-items: center; gap: 8px; margin: 0 0 2px; font-size: 14px; }
        h3 { margin: 6px 0 2px; font-size: 13px; }
        select { max-width: 60%; font-size: 12px; }
        .stat { min-height: 1.4em; margin: 0 0 2px; font-size: 13px; font-variant-numeric: tabular-nums; }
        svg.chart { display: block; width: 100%; height: 160px; }
        svg.chart text { font-size: 10px; fill: var(--muted); }
        svg.chart .grid { stroke: var(--line); stroke-width: 1; }
        svg.chart .series { fill: none; stroke-width: 1.6; stroke-linejoin: round; stroke-linecap: round; }
        .legend { display: flex; flex-wrap: wrap; gap: 0 12px; min-height: 1.2em; font-size: 12px; color: var(--muted); }
        .legend i { display: inline-block; width: 12px; height: 3px; margin-right: 4px; vertical-align: middle; }
        table { width: 100%; margin-top: 4px; border-collapse: collapse; font-size: 12px; font-variant-numeric: tabular-nums; }
        th, td { padding: 1px 6px; text-align: right; border-bottom: 1px solid var(--line); }
        th:first-child, td:first-child { text-align: left; overflow-wrap: anywhere; }
        th { color: var(--muted); font-weight: 600; }
        .bad { color: var(--bad); font-weight: 600; }
        .ok { color: var(--ok); }
        .columns { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 4px 16px; }
        .verdict { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 12px; }
        .verdict .badge { font-size: 16px; padding: 2px 14px; }
        [hidden] { display: none !important; }
        </style>
        </head>

        """#

    private static let body = #"""
        <body>
        <svg id="svg-namespace" width="0" height="0" aria-hidden="true" style="position: absolute"></svg>
        <header>
        <h1 id="profile">wsload</h1>
        <span id="run" class="meta"></span>
        <span id="status" class="badge">connecting</span>
        <span id="clock" class="meta"></span>
        <div class="progress"><div id="progress-bar"></div></div>
        </header>
        <main>
        <section id="summary" class="card wide" hidden>
        <h2>Result</h2>
        <div class="verdict"><span id="verdict" class="badge"></span><span id="verdict-detail" class="meta"></span></div>
        <div class="columns">
        <div><h3>Thresholds</h3><table id="summary-thresholds"></table></div>
        <div><h3>Invariants</h3><table id="summary-invariants"></table></div>
        <div><h3>Totals</h3><table id="summary-totals"></table></div>
        </div>
        </section>
        <section class="card" id="card-connections">
        <h2>Connections</h2>
        <p class="stat" id="stat-connections"></p>
        <svg class="chart" id="chart-connections"></svg>
        <div class="legend" id="legend-connections"></div>
        <table id="table-scenarios"></table>
        </section>
        <section class="card" id="card-messages">
        <h2>Messages per second</h2>
        <p class="stat" id="stat-messages"></p>
        <svg class="chart" id="chart-messages"></svg>
        <div class="legend" id="legend-messages"></div>
        </section>
        <section class="card" id="card-latency">
        <h2>Latency per second <select id="latency-select" aria-label="latency"></select></h2>
        <p class="stat" id="stat-latency"></p>
        <svg class="chart" id="chart-latency"></svg>
        <div class="legend" id="legend-latency"></div>
        </section>
        <section class="card" id="card-errors">
        <h2>Errors per second</h2>
        <p class="stat" id="stat-errors"></p>
        <svg class="chart" id="chart-errors"></svg>
        <div class="legend" id="legend-errors"></div>
        <table id="table-errors"></table>
        </section>
        <section class="card" id="card-reconnects">
        <h2>Reconnects and disconnects per second</h2>
        <p class="stat" id="stat-reconnects"></p>
        <svg class="chart" id="chart-reconnects"></svg>
        <div class="legend" id="legend-reconnects"></div>
        <table id="table-disconnects"></table>
        </section>
        <section class="card" id="card-invariants">
        <h2>Invariants</h2>
        <p class="stat" id="stat-invariants"></p>
        <table id="table-invariants"></table>
        </section>
        </main>

        """#
}
