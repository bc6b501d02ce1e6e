//! The results as a table for people, or one JSON object for tools.

use crate::local::Local;
use crate::measure::Stats;

/// The round-trip results of one size: (size, raw, link, graph).
fn rows<'a>(
    raw: &'a [(usize, Stats)],
    link: &'a [(usize, Stats)],
    graph: &'a [(usize, Stats)],
) -> impl Iterator<Item = (usize, &'a Stats, &'a Stats, &'a Stats)> {
    raw.iter()
        .zip(link)
        .zip(graph)
        .map(|(((size, r), (_, l)), (_, g))| (*size, r, l, g))
}

fn us(ns: f64) -> String {
    format!("{:.2}", ns / 1000.0)
}

pub fn print_table(
    local: &Local,
    raw: &[(usize, Stats)],
    link: &[(usize, Stats)],
    graph: &[(usize, Stats)],
) {
    println!(
        "local write-to-delivery, 64 B payload ({} writes each)",
        local.sink.n
    );
    println!(
        "  {:<28} {:>10} {:>10} {:>10}",
        "target", "mean us", "p50 us", "p99 us"
    );
    for (name, s) in [
        ("sink (inline callback)", &local.sink),
        ("stream ring, then pop", &local.stream),
    ] {
        println!(
            "  {:<28} {:>10} {:>10} {:>10}",
            name,
            us(s.mean_ns),
            us(s.p50_ns),
            us(s.p99_ns)
        );
    }
    println!();
    println!("round trip between two processes, us (raw Unix socket / libtracer link / whole graph path)");
    println!(
        "  {:>7} {:>6} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>7} {:>7}",
        "size",
        "iters",
        "raw p50",
        "link p50",
        "graph p50",
        "link x",
        "raw mean",
        "link mean",
        "graph mean",
        "link x",
        "graph x"
    );
    for (size, r, l, g) in rows(raw, link, graph) {
        println!(
            "  {:>7} {:>6} {:>9} {:>9} {:>9} {:>7.2} {:>9} {:>9} {:>9} {:>7.2} {:>7.2}",
            size_name(size),
            l.n,
            us(r.p50_ns),
            us(l.p50_ns),
            us(g.p50_ns),
            l.p50_ns / r.p50_ns,
            us(r.mean_ns),
            us(l.mean_ns),
            us(g.mean_ns),
            l.mean_ns / r.mean_ns,
            g.mean_ns / r.mean_ns
        );
    }
    println!("  (link x, graph x: ratio to raw; the first link x column is on p50, the last two on the mean)");
}

fn size_name(s: usize) -> String {
    match s {
        s if s >= 1 << 20 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

fn stats_json(s: &Stats) -> String {
    format!(
        "{{\"n\":{},\"mean_ns\":{:.0},\"p50_ns\":{:.0},\"p99_ns\":{:.0}}}",
        s.n, s.mean_ns, s.p50_ns, s.p99_ns
    )
}

pub fn print_json(
    local: &Local,
    raw: &[(usize, Stats)],
    link: &[(usize, Stats)],
    graph: &[(usize, Stats)],
) {
    let rt: Vec<String> = rows(raw, link, graph)
        .map(|(size, r, l, g)| {
            format!(
                "{{\"size\":{size},\"raw\":{},\"link\":{},\"graph\":{},\"link_ratio_p50\":{:.3},\"link_ratio_mean\":{:.3},\"graph_ratio_p50\":{:.3},\"graph_ratio_mean\":{:.3}}}",
                stats_json(r),
                stats_json(l),
                stats_json(g),
                l.p50_ns / r.p50_ns,
                l.mean_ns / r.mean_ns,
                g.p50_ns / r.p50_ns,
                g.mean_ns / r.mean_ns
            )
        })
        .collect();
    println!(
        "{{\"local_64B\":{{\"sink\":{},\"stream\":{}}},\"round_trip\":[{}]}}",
        stats_json(&local.sink),
        stats_json(&local.stream),
        rt.join(",")
    );
}
