"""The text table of a bench/http run: the median round of each workload per target, the
database ceiling, ratios against the peer (with the targets of issue 8) and warnings."""

WORKLOAD_TARGETS = {
    # workload: (least requests/s ratio against the peer, whether p99 must be <= the peer's)
    "health": (1.0, False),
    "list": (1.25, True),
    "list_cat": (1.25, True),
    "categories": (1.25, True),
    "create": (1.25, False),
}
CEILING_SHARE_TARGET = 0.75
OTHERS_WARNING_CORES = 0.15


def median_of_rounds(measurements):
    """The median round (by requests/s; the lower median for an even count) of every
    (target, workload), keyed by that pair, in the order first seen."""
    groups = {}
    for item in measurements:
        groups.setdefault((item["target"], item["workload"]), []).append(item)
    medians = {}
    for key, items in groups.items():
        ordered = sorted(items, key=lambda item: item["requests_per_second"])
        chosen = dict(ordered[(len(ordered) - 1) // 2])
        chosen["rounds_requests_per_second"] = [item["requests_per_second"] for item in
                                                sorted(items, key=lambda item: item["round"])]
        medians[key] = chosen
    return medians


def ms(microseconds):
    if microseconds is None:
        return "-"
    return f"{microseconds / 1000:.2f}"


def number(value, digits=0):
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def columns(rows, header):
    widths = [max(len(str(row[index])) for row in [header] + rows) for index in range(len(header))]

    def line(row):
        cells = []
        for index, cell in enumerate(row):
            text = str(cell)
            cells.append(text.ljust(widths[index]) if index < 2 else text.rjust(widths[index]))
        return "  ".join(cells).rstrip()

    return [line(header), "  ".join("-" * width for width in widths)] + [line(row) for row in rows]


def render(meta, measurements, ceilings):
    options = meta["options"]
    out = []
    out.append(f"bench/http  {meta['started_utc']}  project {meta['project_revision']}")
    out.append(f"machine: {meta['machine']['cores']} cores, load average at start {meta['machine']['load_average']}, "
               f"{meta['machine']['postgres']}, {meta['machine']['wrk']}")
    out.append(f"{options['connections']} connections, {options['threads']} wrk threads, {options['duration']} s measured "
               f"after {options['warmup']} s warm-up, {options['rounds']} round(s), median round shown; seed "
               f"{options['users']} users x {options['categories']} categories x {options['locations']} locations")
    for target in meta["targets"]:
        seed = target.get("seed") or {}
        out.append(f"target {target['name']}: {target['command']}  (seeded by {seed.get('mode', '-')} in "
                   f"{seed.get('seconds', '-')} s)")
    out.append("")

    medians = median_of_rounds(measurements)
    header = ["workload", "target", "req/s", "p50 ms", "p90 ms", "p99 ms", "non-2xx", "sock err",
              "server ms/req", "pg ms/req", "wrk cores", "irq cores", "other cores", "RSS MB", "req/s by round"]
    rows = []
    for (target, workload), item in medians.items():
        rows.append([
            workload, target, number(item["requests_per_second"]),
            ms(item["latency_us"]["p50"]), ms(item["latency_us"]["p90"]), ms(item["latency_us"]["p99"]),
            item["non_2xx"], item["socket_errors"],
            f"{item['server_cpu_ms_per_request']:.3f}", f"{item['postgres_cpu_ms_per_request']:.3f}",
            f"{item['wrk_cores']:.2f}", f"{item['irq_cores']:.2f}", f"{item['other_cores']:.2f}",
            f"{item['rss_peak_kib'] / 1024:.1f}",
            " / ".join(number(value) for value in item["rounds_requests_per_second"]),
        ])
    out.extend(columns(rows, header))

    ceiling_medians = median_of_rounds(ceilings)
    if ceiling_medians:
        out.append("")
        out.append(f"Database ceiling: pgbench -M prepared, {meta.get('ceiling_script', '')}, on {meta.get('ceiling_target', '')}'s database")
        if meta.get("ceiling_sql_check"):
            out.append(f"SQL check: {meta['ceiling_sql_check']}")
        header = ["pgbench", "clients", "tps", "p50 ms", "p90 ms", "p99 ms", "failed", "pg ms/tx",
                  "pgbench cores", "other cores", "tps by round"]
        rows = []
        for (_, name), item in ceiling_medians.items():
            rows.append([
                name, f"{item['clients']} (-j {item['threads']})", number(item["requests_per_second"]),
                ms(item["latency_us"]["p50"]), ms(item["latency_us"]["p90"]), ms(item["latency_us"]["p99"]),
                item["failed"], f"{item['postgres_cpu_ms_per_request']:.3f}", f"{item['client_cores']:.2f}",
                f"{item['other_cores']:.2f}",
                " / ".join(number(value) for value in item["rounds_requests_per_second"]),
            ])
        # The first column is left-aligned by `columns`; clients too.
        out.extend(columns(rows, header))

    targets = [target["name"] for target in meta["targets"]]
    if len(targets) >= 2:
        ours, peer = targets[0], targets[1]
        out.append("")
        out.append(f"{ours} against {peer} (median rounds; targets of issue 8)")
        header = ["workload", "req/s ratio", "target", "p99 ms (ours / peer)", "target"]
        rows = []
        for workload, (least_ratio, p99_rule) in WORKLOAD_TARGETS.items():
            mine, theirs = medians.get((ours, workload)), medians.get((peer, workload))
            if not mine or not theirs or not theirs["requests_per_second"]:
                continue
            ratio = mine["requests_per_second"] / theirs["requests_per_second"]
            p99_mine, p99_theirs = mine["latency_us"]["p99"], theirs["latency_us"]["p99"]
            rows.append([
                workload, f"{ratio:.2f}x", f">= {least_ratio:.2f}x: {'met' if ratio >= least_ratio else 'NOT met'}",
                f"{ms(p99_mine)} / {ms(p99_theirs)}",
                (f"<= peer: {'met' if p99_mine <= p99_theirs else 'NOT met'}" if p99_rule else "-"),
            ])
        out.extend(columns(rows, header))
        mine, theirs = medians.get((ours, "list")), medians.get((peer, "list"))
        if mine and theirs:
            verdict = "met" if mine["rss_peak_kib"] <= theirs["rss_peak_kib"] else "NOT met"
            out.append(f"RSS under the list workload: {mine['rss_peak_kib'] / 1024:.1f} MB / "
                       f"{theirs['rss_peak_kib'] / 1024:.1f} MB (<= peer: {verdict})")

    if ceiling_medians:
        best = max(ceiling_medians.values(), key=lambda item: item["requests_per_second"])
        out.append("")
        for target in targets:
            item = medians.get((target, "list"))
            if item and best["requests_per_second"]:
                share = item["requests_per_second"] / best["requests_per_second"]
                verdict = "met" if share >= CEILING_SHARE_TARGET else "NOT met"
                out.append(f"list on {target}: {share * 100:.0f} % of the best ceiling "
                           f"({number(best['requests_per_second'])} tps, {best['clients']} clients)"
                           + (f" (>= {CEILING_SHARE_TARGET * 100:.0f} %: {verdict})" if target == targets[0] else ""))

    out.append("")
    for target in meta["targets"]:
        if target.get("peak_rss_kib") is not None:
            out.append(f"peak RSS over the whole run (VmHWM, seeding included) of {target['name']}: "
                       f"{target['peak_rss_kib'] / 1024:.1f} MB")

    warnings = list(meta.get("warnings", []))
    for item in measurements + ceilings:
        label = f"{item['workload']} on {item['target']}, round {item['round']}"
        if item.get("other_cores", 0) > OTHERS_WARNING_CORES:
            warnings.append(f"{label}: other processes used {item['other_cores']:.2f} cores meanwhile")
        if item.get("non_2xx") or item.get("socket_errors") or item.get("failed"):
            warnings.append(f"{label}: {item.get('non_2xx', 0)} non-2xx, {item.get('socket_errors', 0)} socket errors, "
                            f"{item.get('failed', 0)} failed")
    if warnings:
        out.append("")
        out.append("Warnings:")
        out.extend(f"  - {warning}" for warning in warnings)
    out.append("")
    out.append("Columns: latencies are wrk's (whole HTTP round trip); non-2xx counts wrk's status errors "
               "(status >= 400); server/pg ms/req is CPU time of the server's processes / of all the cluster's "
               "PostgreSQL processes divided by the requests; wrk/other cores are CPU used meanwhile by wrk and by "
               "processes outside the benchmark, irq cores the machine's interrupt time (loopback traffic is "
               "partly processed there); RSS is the server's largest sampled resident set during that workload.")
    return "\n".join(out) + "\n"
