/// The page around a report's sections: the stylesheet (a responsive grid of cards: three columns on a wide
/// window, two on a medium one, one on a narrow one) and the hover script. Both are constants — nothing a report
/// holds is ever written into them — and the script reads the charts' `data-hover` attributes, builds the tooltip
/// with `textContent` (never as HTML), and fetches nothing. Without it the page is the same, minus hover values.
extension RunHTML {
    static func page(title: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title))</title>
        <style>\(stylesheet)</style></head>
        <body>\(body)<div id="tip" class="tip" role="tooltip" hidden></div>
        <script>\(hoverScript)</script></body></html>

        """
    }

    static let stylesheet = """

        :root { --bg: #f4f5f7; --card: #fff; --ink: #1d2330; --muted: #667085; --line: #e4e7ec; --good: #12805c;
          --bad: #c62828; --warn: #a15c00; }
        * { box-sizing: border-box; }
        body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; padding: 18px 24px 40px;
          color: var(--ink); background: var(--bg); }
        header { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 12px; margin-bottom: 12px; }
        h1 { font-size: 21px; margin: 0; font-weight: 650; } h1 .name, h3 .name { color: #1f5fa8; }
        .meta { color: var(--muted); font-size: 13px; flex-basis: 100%; }
        .badge { padding: 2px 10px; border-radius: 999px; font-size: 12px; font-weight: 600; background: #e8ebf0; }
        .badge.pass { background: #e2f3eb; color: var(--good); } .badge.fail { background: #fde9e7; color: var(--bad); }
        .badge.warn { background: #fff1dc; color: var(--warn); }
        h2 { font-size: 15px; margin: 26px 0 10px; }
        h3 { font-size: 13px; margin: 0 0 6px; }
        .tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(140px, 1fr)); gap: 10px; margin-bottom: 14px; }
        .tile { background: var(--card); border: 1px solid var(--line); border-top: 3px solid #c5ccd6; border-radius: 8px;
          padding: 8px 12px; min-width: 0; }
        .tile .label { font-size: 11px; color: var(--muted); text-transform: uppercase; letter-spacing: .03em;
          white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
        .tile .value { font-size: 21px; font-weight: 650; font-variant-numeric: tabular-nums; white-space: nowrap;
          overflow: hidden; text-overflow: ellipsis; }
        .tile .value small { font-size: 13px; font-weight: 600; }
        .tile .detail { font-size: 12px; color: var(--muted); white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
        .tile.pass { border-top-color: var(--good); } .tile.pass .value { color: var(--good); }
        .tile.fail { border-top-color: var(--bad); } .tile.fail .value { color: var(--bad); }
        .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(max(360px, calc((100% - 32px) / 3)), 1fr));
          gap: 16px; align-items: start; }
        .grid.two { grid-template-columns: repeat(auto-fill, minmax(max(360px, calc((100% - 16px) / 2)), 1fr)); }
        @media (max-width: 760px) { body { padding: 12px; } .grid { grid-template-columns: 1fr; } }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; margin: 0;
          min-width: 0; }
        .wide { grid-column: 1 / -1; } .scroll { overflow-x: auto; }
        figcaption { display: flex; flex-wrap: wrap; align-items: baseline; gap: 2px 10px; margin-bottom: 4px; }
        figcaption .title { font-weight: 600; font-size: 13px; } .note { color: var(--muted); font-size: 12px; }
        .keys { margin-left: auto; display: flex; flex-wrap: wrap; gap: 2px 10px; font-size: 12px; color: #475467; min-width: 0; }
        .key { white-space: nowrap; max-width: 180px; overflow: hidden; text-overflow: ellipsis; }
        .key i { display: inline-block; width: 16px; border-top: 3px solid; vertical-align: middle; margin-right: 4px; }
        .key i.dashed { border-top-style: dotted; }
        svg.chart { display: block; width: 100%; height: auto; touch-action: none; }
        svg .gridline { stroke: #edf0f3; } svg .frame { fill: none; stroke: #c9ced6; }
        svg text { font: 10.5px system-ui, sans-serif; fill: #596273; } svg text.empty { fill: #98a2b3; font-size: 13px; }
        svg .marker { stroke: var(--warn); stroke-dasharray: 3 3; }
        svg .cursor { visibility: hidden; pointer-events: none; } svg .cursor line { stroke: #8a94a6; }
        .tip { position: fixed; z-index: 10; pointer-events: none; background: rgba(22, 27, 36, .94); color: #fff;
          padding: 6px 9px; border-radius: 6px; font-size: 12px; line-height: 1.5; font-variant-numeric: tabular-nums;
          max-width: 340px; box-shadow: 0 4px 14px rgba(0, 0, 0, .25); }
        .tip[hidden] { display: none; } .tip .head { color: #c9d1dd; }
        .tip .row { display: flex; gap: 14px; justify-content: space-between; }
        .tip .row span { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
        .tip .row i { display: inline-block; width: 9px; height: 9px; border-radius: 2px; margin-right: 6px; }
        table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
        th, td { padding: 4px 8px; text-align: right; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { font-size: 12px; color: var(--muted); font-weight: 600; }
        th:first-child, td:first-child, th.text, td.text { text-align: left; } td.text { overflow-wrap: break-word; }
        tr:last-child td { border-bottom: none; } table + table { margin-top: 12px; }
        tr.pass td:first-child { color: var(--good); } tr.fail td, td.fail { color: var(--bad); font-weight: 600; }

        """

    /// Hover values: on a pointer over a chart, a vertical cursor at the nearest point, a dot on each series, and a
    /// tooltip with the point's span and every series' value there (a series' nearest point within 12 units).
    static let hoverScript = """

        (function () {
          "use strict";
          var tip = document.getElementById("tip");
          function element(tag, className, text) {
            var node = document.createElement(tag);
            if (className) node.className = className;
            if (text !== undefined) node.textContent = text;
            return node;
          }
          function nearest(xs, x) {
            var low = 0, high = xs.length - 1;
            while (high - low > 1) { var middle = (low + high) >> 1; if (xs[middle] < x) low = middle; else high = middle; }
            return Math.abs(xs[high] - x) < Math.abs(xs[low] - x) ? high : low;
          }
          Array.prototype.forEach.call(document.querySelectorAll("svg.chart[data-hover]"), function (svg) {
            var data = JSON.parse(svg.getAttribute("data-hover"));
            if (!data.x.length) return;
            var cursor = svg.querySelector(".cursor"), line = cursor.querySelector("line"), dots = cursor.querySelectorAll("circle");
            svg.addEventListener("pointermove", function (event) {
              var box = svg.getBoundingClientRect(), view = svg.viewBox.baseVal;
              var index = nearest(data.x, (event.clientX - box.left) * view.width / box.width), at = data.x[index];
              line.setAttribute("x1", at);
              line.setAttribute("x2", at);
              tip.textContent = "";
              tip.appendChild(element("div", "head", data.t[index]));
              data.s.forEach(function (series, number) {
                var found = -1;
                for (var step = 0; found < 0; step++) {
                  var before = index - step, after = index + step;
                  var hasBefore = before >= 0 && at - data.x[before] <= 12, hasAfter = after < data.x.length && data.x[after] - at <= 12;
                  if (!hasBefore && !hasAfter) break;
                  if (hasBefore && series.y[before] !== null) found = before;
                  else if (hasAfter && series.y[after] !== null) found = after;
                }
                var row = element("div", "row"), name = element("span"), swatch = element("i");
                swatch.style.background = series.c;
                name.appendChild(swatch);
                name.appendChild(document.createTextNode(series.n));
                row.appendChild(name);
                row.appendChild(element("b", "", found < 0 ? "–" : series.v[found]));
                tip.appendChild(row);
                var dot = dots[number];
                dot.style.display = found < 0 ? "none" : "";
                if (found >= 0) { dot.setAttribute("cx", data.x[found]); dot.setAttribute("cy", series.y[found]); }
              });
              cursor.style.visibility = "visible";
              tip.hidden = false;
              var left = event.clientX + 16, top = event.clientY + 14;
              if (left + tip.offsetWidth > window.innerWidth - 8) left = event.clientX - 16 - tip.offsetWidth;
              if (top + tip.offsetHeight > window.innerHeight - 8) top = window.innerHeight - 8 - tip.offsetHeight;
              tip.style.left = Math.max(4, left) + "px";
              tip.style.top = Math.max(4, top) + "px";
            });
            svg.addEventListener("pointerleave", function () { cursor.style.visibility = "hidden"; tip.hidden = true; });
          });
        })();

        """
}
