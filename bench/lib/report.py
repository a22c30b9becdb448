"""The Markdown section bench/compare writes between `<!-- compare:begin -->` and `<!-- compare:end -->`
of docs/PERFORMANCE.md, and the SVG charts it links (docs/perf/compare-*.svg)."""

import os

import svg
from results import median

BEGIN, END = "<!-- compare:begin -->", "<!-- compare:end -->"
SERVERS = ("canopy", "slapd")
# Seed 001's findings, for the scenario sentences.
PAPER = {
    "sizes": "the paper's server lost 21% of its throughput from 10 000 to 50 000 entries and another "
             "23% to 100 000, once the directory no longer fitted its cache",
    "entry_sizes": "the paper's in-memory server lost about 30% of its peak throughput from 488 B to "
                   "4 880 B entries, mostly to ASN.1 encoding",
    "sessions": "the paper gained about 60% by keeping the session open instead of connecting per "
                "search",
}


def fmt(v, digits=0):
    if v is None:
        return "–"
    if digits == 0 and abs(v) < 100 and v != int(v):
        return "%.1f" % v
    if digits == 0:
        return "{:,.0f}".format(v).replace(",", " ")
    return "{:.{d}f}".format(v, d=digits)


def ratio(a, b):
    return "**%.2f**" % (a / b) if a and b else "–"


def mib(kib_or_bytes, is_bytes=False):
    if kib_or_bytes is None:
        return "–"
    v = kib_or_bytes / (1 << 20 if is_bytes else 1 << 10)
    return "%.0f MiB" % v if v >= 10 else "%.1f MiB" % v


def med(cell, server, key="throughput"):
    return median([r.get(key) for r in (cell or {}).get(server, [])])


def runs_list(cell, server):
    return ", ".join(fmt(r.get("throughput")) for r in (cell or {}).get(server, []))


def cell_row(name, cell):
    c, s = med(cell, "canopy"), med(cell, "slapd")
    return "| %s | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s / %s |" % (
        name, runs_list(cell, "canopy"), runs_list(cell, "slapd"), fmt(c), fmt(s), ratio(c, s),
        fmt(med(cell, "canopy", "p99"), 2), fmt(med(cell, "slapd", "p99"), 2),
        fmt(med(cell, "canopy", "cpu_us"), 1), fmt(med(cell, "slapd", "cpu_us"), 1),
        fmt(med(cell, "canopy", "client_cpu_pct")), fmt(med(cell, "slapd", "client_cpu_pct")))


CELL_HEAD = ("| %s | canopy ops/s per run | slapd ops/s per run | canopy median | slapd median "
             "| canopy / slapd | p99 response ms (canopy / slapd) | server CPU µs/op (canopy / slapd) "
             "| bench client CPU %% of a core (canopy / slapd) |\n"
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")


def slug(text):
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-").replace("--", "-")


def runs_charts(perf_dir, prefix, rows, servers=SERVERS, ylabel="operations/s"):
    """One runs chart per row (name, cell) under perf_dir, and the Markdown line that shows them."""
    if not perf_dir:
        return []
    images = []
    for name, cell in rows:
        chart = "%s-%s" % (prefix, slug(name))
        series = {s: [run.get("throughput") for run in (cell or {}).get(s, [])] for s in servers}
        if svg.runs_chart(os.path.join(perf_dir, chart + ".svg"), name, ylabel, series):
            images.append("![%s](perf/%s.svg)" % (name, chart))
    return [" ".join(images), ""] if images else []


def dataset_table(r, keys):
    out = ["| data set | | canopy | slapd | canopy / slapd |", "| --- | --- | ---: | ---: | ---: |"]
    for key in keys:
        d = r["datasets"].get(key)
        if not d:
            continue
        name = "%s entries × ~%d B (LDIF %s)" % (fmt(d["entries"]), d["entry_size"],
                                                mib(d["ldif_bytes"], True))
        load = d["load"]
        out.append("| %s | offline load (`canopy import` / `slapadd -q`) | %.2f s | %.2f s | %s |" % (
            name, load["canopy"], load["slapd"], ratio(load["canopy"], load["slapd"])))
        du = {s: d["disk"][s]["du"] for s in SERVERS}
        out.append("| | database on disk after load (du) | %s | %s | %s |" % (
            mib(du["canopy"], True), mib(du["slapd"], True), ratio(du["canopy"], du["slapd"])))
        pages = {s: d["disk"][s].get("pages") for s in SERVERS}
        if any(pages.values()):
            out.append("| | pages in use after load (mdb_stat -e; 4 KiB) | %s | %s | %s |" % (
                fmt(pages["canopy"]), fmt(pages["slapd"]), ratio(pages["canopy"], pages["slapd"])))
        if d.get("disk_end"):
            de = {s: d["disk_end"][s]["du"] for s in SERVERS}
            out.append("| | database on disk after the runs (du) | %s | %s | %s |" % (
                mib(de["canopy"], True), mib(de["slapd"], True), ratio(de["canopy"], de["slapd"])))
            # The write workloads run for a fixed time, so the faster server ends with more entries:
            # compare the size per entry too.
            ne = {s: d["disk_end"][s].get("entries") for s in SERVERS}
            if all(ne.values()):
                out.append("| | entries after the runs | %s | %s | %s |" % (
                    fmt(ne["canopy"]), fmt(ne["slapd"]), ratio(ne["canopy"], ne["slapd"])))
                per = {s: de[s] / ne[s] for s in SERVERS}
                out.append("| | database bytes per entry after the runs | %s | %s | %s |" % (
                    fmt(round(per["canopy"])), fmt(round(per["slapd"])),
                    ratio(per["canopy"], per["slapd"])))
        for label, m in (("after start", "mem_loaded"),
                         ("after the read-only workloads (same entries on both)", "mem_read"),
                         ("after the runs", "mem_end")):
            if d.get(m):
                rss = {s: d[m].get(s, {}).get("VmRSS") for s in SERVERS}
                out.append("| | resident memory %s (VmRSS) | %s | %s | %s |" % (
                    label, mib(rss["canopy"]), mib(rss["slapd"]), ratio(rss["canopy"], rss["slapd"])))
                # VmRSS counts the database pages mapped so far; the heap is the anonymous part.
                for part, key in (("anonymous (heap, stacks)", "RssAnon"),
                                  ("file-backed (mapped database pages)", "RssFile")):
                    v = {s: d[m].get(s, {}).get(key) for s in SERVERS}
                    if all(v.values()):
                        out.append("| | – of it %s | %s | %s | %s |" % (
                            part, mib(v["canopy"]), mib(v["slapd"]), ratio(v["canopy"], v["slapd"])))
        if d.get("mem_end"):
            hwm = {s: d["mem_end"].get(s, {}).get("VmHWM") for s in SERVERS}
            out.append("| | peak resident memory (VmHWM) | %s | %s | %s |" % (
                mib(hwm["canopy"]), mib(hwm["slapd"]), ratio(hwm["canopy"], hwm["slapd"])))
    return "\n".join(out)


def change(a, b):
    return "%+.0f%%" % ((b / a - 1) * 100) if a and b else "–"


def scenario(r, title, section, xlabel, perf_dir, chart, sentence_key, label=str):
    data = r.get(section) or {}
    if not data:
        return []
    xs = list(data.keys())
    cells = [data[x]["cell"] if "cell" in data[x] else data[x] for x in xs]
    out = ["### " + title, "", CELL_HEAD % xlabel]
    for x, cell in zip(xs, cells):
        out.append(cell_row(label(x), cell))
    out.append("")
    if chart and perf_dir:
        series = {s: [med(c, s) for c in cells] for s in SERVERS}
        svg.line_chart(os.path.join(perf_dir, chart + ".svg"), title, xlabel, "operations/s", xs,
                       series)
        series = {s: [med(c, s, "p99") for c in cells] for s in SERVERS}
        svg.line_chart(os.path.join(perf_dir, chart + "-p99.svg"), title + ": p99", xlabel,
                       "p99 response time (ms)", xs, series)
        out += ["![%s](perf/%s.svg) ![p99](perf/%s-p99.svg)" % (title, chart, chart), ""]
    if len(cells) >= 2:
        first, last = cells[0], cells[-1]
        sentence = "From %s to %s: canopy %s, slapd %s (median throughput)" % (
            label(xs[0]), label(xs[-1]), change(med(first, "canopy"), med(last, "canopy")),
            change(med(first, "slapd"), med(last, "slapd")))
        if PAPER.get(sentence_key):
            sentence += "; " + PAPER[sentence_key]
        out.append(sentence + ".")
        out.append("")
    return out


def render(r, perf_dir):
    m, o = r["machine"], r["settings"]
    main = r["datasets"].get(r.get("main_dataset"), {})
    out = [
        "## Side by side: every workload (bench/compare, %s)" % m["date"],
        "",
        "Generated by `bench/compare`; everything between the `compare` markers is rewritten by each run.",
        "",
        "- Machine: %s, %s cores, %s MiB RAM, Linux %s; load average %s at the start, %s at the end." % (
            m["cpu"], m["nproc"], fmt(m["mem_mib"]), m["kernel"], " ".join(m["loadavg_start"]),
            " ".join(m.get("loadavg_end", ["?"]))),
        "- Versions: %s, binary `%s` built %s (source tree at git %s); OpenLDAP %s (back-mdb, "
        "loglevel %s); ldclt %s." % (
            m["canopy"], m["canopy_bin"], m.get("canopy_mtime", "?"), m["git"], m["slapd"],
            o["slapd_loglevel"], m["ldclt"] or "–"),
        "- Both servers: the same LDIF from `canopy bench gen --passwords` (seed %d), the same index list "
        "written into both configurations (bench/lib/servers.py `INDEXES`: canopy's defaults), no size "
        "limit, one durable commit per write (canopy `durable = true`, slapd without `dbnosync`), no "
        "per-operation log, on free loopback ports; the client runs on the same cores." % o["seed"],
        "- slapd: `threads %s`, `tool-threads %s`, loaded with `slapadd -q` + `sync`; both servers ran "
        "%s s of discarded durable modifies before anything was measured, and each database file was "
        "written back, dropped from the page cache and read once in 1 MiB reads before the warm-up and "
        "before the write workloads (why: \"How slapd runs in the comparison\" below)." % (o.get("slapd_threads", "16 (default)"), o.get("slapd_tool_threads", 1),
                                  fmt(o.get("warm_writes", 0))),
        "- Disk: one 4 KiB overwrite + fdatasync took %s ms (median of 50) at the start; slapd commits "
        "each write alone, so its durable write rate here is bounded near 1000 / that / the pages per "
        "commit." % (fmt(m.get("fsync_ms"), 2) if m.get("fsync_ms") is not None else "?"),
        "- Each cell: %d run(s) per server of %g s (scaling scenarios: %g s) after %g s warm-up, "
        "alternating servers run by run; figures are medians. Server CPU per operation is the server's "
        "user+system time over the run (from /proc/PID/stat) divided by the operations it answered." % (
            o["runs"], o["duration"], o.get("scale_duration", o["duration"]), o["warmup"]),
        "- Whole comparison took %.0f s." % r.get("elapsed_s", 0),
        "",
        "```sh",
        r["command"],
        "```",
        "",
    ]
    if r.get("problems"):
        out += ["**Problems in this run:**", ""] + ["- " + p for p in r["problems"]] + [""]
    out += ["### Load, size and memory", "", dataset_table(r, [r.get("main_dataset")]), ""]

    wls = r.get("workloads") or {}
    if wls:
        out += ["### Workloads (%s entries, %d clients unless noted)" % (fmt(o["entries"]), o["clients"]),
                "", CELL_HEAD % "workload"]
        for wl, cell in wls.items():
            note = " (1 client)" if wl == "scan" else ""
            out.append(cell_row(wl + note, cell))
        out.append("")
        out += runs_charts(perf_dir, "compare-workload",
                           [(wl + (" (1 client)" if wl == "scan" else ""), c) for wl, c in wls.items()])
        cmds = r.get("commands", {})
        if cmds.get("search"):
            out += ["One run, e.g.: `%s`" % cmds["search"], ""]
        scan = wls.get("scan")
        if scan and main:
            parts = []
            for s in SERVERS:
                p50 = med(scan, s, "p50")
                t = p50 / 1000 if p50 else None
                raw = main.get("raw_read", {}).get(s)
                dd = main.get("dd_read", {}).get(s)
                if t and raw:
                    text = ("%s %.3f s per full scan (median response time), %.2f× the %.3f s of reading its "
                            "%s data.mdb raw from the page cache in 1 MiB reads" % (
                                s, t, t / raw, raw, mib(main["disk"][s]["du"], True)))
                    if dd:
                        text += " and %.2f× the %.3f s of `dd` copying it with its default 512-byte blocks" % (
                            t / dd, dd)
                    parts.append(text)
            if parts:
                out += ["Scan against a raw read: " + "; ".join(parts) + ".", ""]

    ls = r.get("ldclt_search") or {}
    if ls:
        out += ["### Cross-check with ldclt (exact uid, persistent anonymous connections)", "",
                "| ldclt threads | canopy searches/s per run | slapd searches/s per run | canopy median "
                "| slapd median | canopy / slapd | server CPU µs/search (canopy / slapd) |",
                "| ---: | --- | --- | ---: | ---: | ---: | ---: |"]
        for t, cell in ls.items():
            c, s = med(cell, "canopy"), med(cell, "slapd")
            out.append("| %s | %s | %s | %s | %s | %s | %s / %s |" % (
                t, runs_list(cell, "canopy"), runs_list(cell, "slapd"), fmt(c), fmt(s), ratio(c, s),
                fmt(med(cell, "canopy", "cpu_us"), 1), fmt(med(cell, "slapd", "cpu_us"), 1)))
        out += ["", "`%s`" % r["commands"].get("ldclt", ""), ""]
        out += runs_charts(perf_dir, "compare", [("ldclt search, %s threads" % t, c)
                                                      for t, c in ls.items()], ylabel="searches/s")

    lim = r.get("limit") or {}
    if lim:
        out += ["### The physical limit (a storage-free server on canopy's codec and connection loop)", "",
                "`canopy bench canned` answers every bind with success and every search with one fixed, "
                "pre-encoded entry (the scan's `(objectClass=*)` with %s copies of it), with the "
                "connection loop of canopy's server (crates/bench/src/canned.rs) and no storage, on the "
                "same loopback; measured by the same clients, the three servers alternating run by run. "
                "The fraction is the server's median rate over the limit's." % fmt(o["entries"]), "",
                "| workload | limit ops/s per run | canopy ops/s per run | slapd ops/s per run | limit median "
                "| canopy / limit | slapd / limit | server CPU µs/op (limit / canopy / slapd) |",
                "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |"]
        rows = [(wl + (" (1 client)" if wl == "scan" else ""), cell)
                for wl, cell in (lim.get("workloads") or {}).items()]
        rows += [("ldclt exact uid, %s threads" % t, cell) for t, cell in (lim.get("ldclt") or {}).items()]
        for name, cell in rows:
            lv, c, s = med(cell, "limit"), med(cell, "canopy"), med(cell, "slapd")
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s / %s / %s |" % (
                name, runs_list(cell, "limit"), runs_list(cell, "canopy"), runs_list(cell, "slapd"),
                fmt(lv), ratio(c, lv), ratio(s, lv), fmt(med(cell, "limit", "cpu_us"), 1),
                fmt(med(cell, "canopy", "cpu_us"), 1), fmt(med(cell, "slapd", "cpu_us"), 1)))
        out += ["", "```sh", lim.get("command", ""), lim.get("ldclt_command", ""), "```", ""]
        out += runs_charts(perf_dir, "compare", [(name + " beside the limit", c) for name, c in rows],
                           servers=("limit", "canopy", "slapd"))

    w = r.get("ldclt_writes") or {}
    if w:
        out += ["### Write rates through ldclt (%d threads, fsync per commit on both)" % w["threads"], "",
                "| operation | canopy ops/s | slapd ops/s | canopy / slapd | server CPU µs/op (canopy / slapd) |",
                "| --- | ---: | ---: | ---: | ---: |"]
        for op in ("add", "modify", "modify-description", "delete"):
            if op not in w:
                continue
            c, s = w[op]["canopy"], w[op]["slapd"]
            lb = {x: "≥ " if w[op][x].get("lower_bound") else "" for x in SERVERS}
            # Cells run more than once show the median, then every run.
            each = {x: " (%s)" % ", ".join(fmt(run["throughput"]) for run in w[op][x]["runs"])
                    if len(w[op][x].get("runs", [])) > 1 else "" for x in SERVERS}
            out.append("| %s | %s%s%s | %s%s%s | %s | %s / %s |" % (
                op, lb["canopy"], fmt(c["throughput"]), each["canopy"], lb["slapd"],
                fmt(s["throughput"]), each["slapd"],
                ratio(c["throughput"], s["throughput"]),
                fmt(c["cpu_us"], 1), fmt(s["cpu_us"], 1)))
        out += ["", "add: objectClass person entries `cn=benchNNNNNNN,ou=Accounting` for two 10 s samples; "
                "modify: replace `sn` (indexed eq, sub) of a random one of the first %s added, one 10 s "
                "sample per run, RUNS runs per server alternating which goes first, the median and "
                "then every run; modify-description: the same with `description` (not indexed, the "
                "attribute `canopy bench`'s modify workload replaces); delete: "
                "the added entries in order, one 10 s sample (≥: the server deleted all of them before "
                "the sample ended, so the rate is a lower bound). For delete, `-R` is the number that "
                "server added minus one." % fmt(w["modified_range"]), "", "```sh"]
        out += r["commands"].get("ldclt_writes", []) + ["```", ""]
        out += runs_charts(perf_dir, "compare", [
            ("ldclt " + op, {x: w[op][x].get("runs") or [w[op][x]] for x in SERVERS})
            for op in ("add", "modify", "modify-description", "delete") if op in w])
        wm = (r.get("workloads") or {}).get("modify")
        if wm and "modify-description" in w:
            out += ["Cross-check of the `canopy bench` modify figures (replace `description` of random "
                    "generated users) with ldclt's modify-description run against the same server "
                    "processes:", "",
                    "| server | canopy bench modify ops/s (median) | ldclt modify-description ops/s | "
                    "bench / ldclt |", "| --- | ---: | ---: | ---: |"]
            for srv in SERVERS:
                b, l = med(wm, srv), w["modify-description"][srv]["throughput"]
                out.append("| %s | %s | %s | %s |" % (srv, fmt(b), fmt(l), ratio(b, l)))
            out.append("")

    out += scenario(r, "Concurrency scaling (search, persistent sessions)", "clients", "clients",
                    perf_dir, "compare-clients", None)
    out += scenario(r, "Session reuse (messaging: bind + search per session)", "sessions", "session",
                    None, None, "sessions")
    out += scenario(r, "Directory size (search, %d clients)" % o["clients"], "sizes", "entries",
                    perf_dir, "compare-sizes", "sizes", label=lambda x: fmt(int(x)))
    out += scenario(r, "Entry size (search, %s entries)" % fmt(o["entry_size_entries"]), "entry_sizes",
                    "bytes per entry", None, None, "entry_sizes", label=lambda x: "~%s B" % x)
    keys = [v["dataset"] for sec in ("sizes", "entry_sizes") for v in (r.get(sec) or {}).values()
            if isinstance(v, dict) and v.get("dataset") and v["dataset"] != r.get("main_dataset")]
    if keys:
        out += ["Load, size and memory of the scenario data sets:", "",
                dataset_table(r, list(dict.fromkeys(keys))), ""]
    return "\n".join(out).rstrip() + "\n"


def write(r, doc, perf_dir):
    """Replace the marked section of `doc` (created, or markers added before its first `## `)."""
    os.makedirs(perf_dir, exist_ok=True)
    section = "%s\n%s%s" % (BEGIN, render(r, perf_dir), END)
    text = open(doc).read() if os.path.exists(doc) else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section + rest.split(END, 1)[1]
    elif "\n## " in text:
        i = text.index("\n## ") + 1
        text = text[:i] + section + "\n\n" + text[i:]
    else:
        text = text + ("\n" if text else "") + section + "\n"
    tmp = doc + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, doc)
