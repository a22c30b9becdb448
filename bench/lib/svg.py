"""Small SVG charts for bench/compare: a line chart (one line per server) for the scaling scenarios,
and a runs chart (a bar at each server's median, a dot for every run) for each workload.

The x axis is categorical (client counts, directory sizes) and evenly spaced, which is how the
scenarios are chosen; the y axis starts at zero so that ratios read off the picture honestly.
"""

from xml.sax.saxutils import escape

COLORS = {"canopy": "#1b7837", "slapd": "#762a83", "limit": "#878787"}
W, H, LEFT, RIGHT, TOP, BOTTOM = 640, 360, 70, 110, 40, 50


def _nice_max(v):
    if v <= 0:
        return 1.0
    mag = 10 ** len(str(int(v))) / 10
    for step in (1, 2, 2.5, 5, 10):
        if step * mag >= v:
            return step * mag
    return 10 * mag


def _head(width, height, title_x, title):
    """The opening of a chart: its size, a white background and the title."""
    return [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
        'font-family="sans-serif" font-size="12">' % (width, height),
        '<rect width="100%" height="100%" fill="white"/>',
        '<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>' % (title_x, escape(title)),
    ]


def _grid(out, left, right, ymax, py, ylabel, top, ph):
    """Five horizontal grid lines with their values, the y axis label and the x axis line."""
    for k in range(5):
        y = ymax * k / 4
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (left, py(y), right, py(y)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>'
                   % (left - 6, py(y) + 4, "{:,.0f}".format(y) if ymax >= 10 else "%.2g" % y))
    out.append('<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">%s</text>'
               % (top + ph / 2, top + ph / 2, escape(ylabel)))
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (left, top + ph, right, top + ph))


def line_chart(path, title, xlabel, ylabel, xs, series):
    """series: {label: [y or None per x]}."""
    ymax = _nice_max(max([y for ys in series.values() for y in ys if y is not None] or [1]))
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    n = max(len(xs), 1)

    def px(i):
        return LEFT + (pw * (i + 0.5) / n)

    def py(y):
        return TOP + ph - ph * y / ymax

    out = _head(W, H, LEFT, title)
    _grid(out, LEFT, LEFT + pw, ymax, py, ylabel, TOP, ph)
    for i, x in enumerate(xs):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (px(i), TOP + ph + 18, escape(str(x))))
    out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
               % (LEFT + pw / 2, H - 8, escape(xlabel)))
    for j, (label, ys) in enumerate(series.items()):
        color = COLORS.get(label, "#2166ac")
        pts = [(px(i), py(y)) for i, y in enumerate(ys) if y is not None]
        if pts:
            out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                       % (color, " ".join("%.1f,%.1f" % p for p in pts)))
        for x, y in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x, y, color))
        ly = TOP + 10 + 18 * j
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>'
                   % (LEFT + pw + 12, ly, LEFT + pw + 32, ly, color))
        out.append('<text x="%d" y="%d">%s</text>' % (LEFT + pw + 36, ly + 4, escape(label)))
    out.append("</svg>\n")
    with open(path, "w") as f:
        f.write("\n".join(out))


def runs_chart(path, title, ylabel, series):
    """series: {server: [value of each run]}. A bar at each server's median, a dot per run, the median
    written above its bar; servers without runs are left out. The y axis starts at zero."""
    series = {k: [v for v in vs if v is not None] for k, vs in series.items()}
    series = {k: vs for k, vs in series.items() if vs}
    if not series:
        return False
    w, h, left, top, bottom = 120 + 110 * len(series), 300, 70, 40, 40
    ymax = _nice_max(max(v for vs in series.values() for v in vs))
    pw, ph = w - left - 20, h - top - bottom
    n = len(series)

    def py(y):
        return top + ph - ph * y / ymax

    out = _head(w, h, 10, title)
    _grid(out, left, left + pw, ymax, py, ylabel, top, ph)
    slot = pw / n
    for i, (label, vs) in enumerate(series.items()):
        color = COLORS.get(label, "#2166ac")
        cx = left + slot * (i + 0.5)
        ordered = sorted(vs)
        mid = len(ordered) // 2
        median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
        bw = min(60, slot * 0.6)
        out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.35"/>'
                   % (cx - bw / 2, py(median), bw, top + ph - py(median), color))
        for j, v in enumerate(vs):
            dx = (j - (len(vs) - 1) / 2) * min(8, bw / max(len(vs), 1))
            out.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>' % (cx + dx, py(v), color))
        out.append('<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>'
                   % (cx, py(median) - 8, "{:,.0f}".format(median) if median >= 100 else "%.3g" % median))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (cx, top + ph + 18, escape(label)))
    out.append("</svg>\n")
    with open(path, "w") as f:
        f.write("\n".join(out))
    return True
